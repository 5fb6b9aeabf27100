"""Undo exactly the last restore, whatever its mode, through the real server (issue 28, finding 1).

Restore code to turn 1, then restore the conversation: ``retrace/restore/undoLast`` must put the
conversation back and leave the code alone (it used to revert the earlier code restore), say what
it undid, be undoable itself (a redo), and find the last restore again after a server restart.
The reason question is allowed only after a code restore that changed files, never after an undo
or a conversation-only restore."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def restore(editor: EditorClient, cp_id: str, mode: str) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/checkpoint/restore", {"id": cp_id, "mode": mode})
    return result


async def head_of(editor: EditorClient, session_id: str) -> str | None:
    conversation = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    head: str | None = conversation["head"]
    return head


async def two_turns(editor: EditorClient) -> tuple[str, str]:
    """Turn 1 and turn 2 of one session; returns (session id, turn 1's first checkpoint)."""
    first = await editor.run_turn("first task")
    await editor.run_turn("second task", session_id=first["sessionId"])
    [hello, *_] = [e["checkpoint"]["id"] for e in editor.events_of("checkpointCreated", first["turnId"])]
    return first["sessionId"], hello


async def test_undo_after_a_conversation_restore_undoes_the_conversation_not_the_earlier_code(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    editor = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        sid = await conversation_then_undo(editor, workspace)
    finally:
        await stop_editor(editor)
    # From the journal: a new server finds the same last restore (the redo) and undoes it.
    again = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        before = await head_of(again, sid)
        undone = await again.request("retrace/restore/undoLast", {})
        assert undone["undid"].startswith("Undid: Restore conversation to"), undone
        assert await head_of(again, sid) != before
        assert not (workspace / "counter.txt").exists(), "the code restore was left alone"
    finally:
        await stop_editor(again)


async def conversation_then_undo(editor: EditorClient, workspace: Path) -> str:
    """Restore code, then conversation, undo, redo; returns the session id."""
    sid, target = await two_turns(editor)
    end_of_turn_two = await head_of(editor, sid)
    code = await restore(editor, target, "code")
    assert code["outcome"]["kind"] == "applied", code
    assert code["askReason"] is True, "a code restore that changed files may ask why"
    restored_code = {p: (workspace / p).read_text("utf-8") for p in ("src/app.py", "README.md")}
    assert not (workspace / "counter.txt").exists()

    conv = await restore(editor, target, "conversation")
    assert conv["askReason"] is False, "never ask after a conversation-only restore"
    cut = await head_of(editor, sid)
    assert cut != end_of_turn_two

    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["undid"].startswith("Undid: Restore conversation to"), undone
    assert undone["askReason"] is False, "never ask after an undo"
    assert await head_of(editor, sid) == end_of_turn_two, "the conversation is back"
    assert {p: (workspace / p).read_text("utf-8") for p in restored_code} == restored_code
    assert not (workspace / "counter.txt").exists(), "the earlier code restore was left alone"

    redone = await editor.request("retrace/restore/undoLast", {})
    assert redone["undid"].startswith("Redid: Restore conversation to"), redone
    assert await head_of(editor, sid) == cut
    return sid


async def test_undo_after_each_mode_restores_exactly_what_it_changed(
    editor: EditorClient, workspace: Path
) -> None:
    sid, target = await two_turns(editor)
    end = await head_of(editor, sid)
    app_before = (workspace / "src/app.py").read_text("utf-8")

    both = await restore(editor, target, "both")
    assert both["outcome"]["kind"] == "applied", both
    assert await head_of(editor, sid) != end and not (workspace / "counter.txt").exists()
    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["undid"].startswith("Undid: Restore code and conversation to"), undone
    assert await head_of(editor, sid) == end
    assert (workspace / "src/app.py").read_text("utf-8") == app_before
    assert (workspace / "counter.txt").exists()

    code = await restore(editor, target, "code")
    assert code["outcome"]["kind"] == "applied", code
    assert code["askReason"] is False, "at most one reason question per interval"
    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["undid"].startswith("Undid: Restore code to"), undone
    assert (workspace / "src/app.py").read_text("utf-8") == app_before
    assert await head_of(editor, sid) == end, "a code undo leaves the conversation alone"


async def test_an_undo_sent_while_a_restore_is_applied_undoes_that_restore(
    editor: EditorClient, workspace: Path
) -> None:
    """The user presses *Undo restore* the moment the files change, while the restore is still
    being finished (the editor applying and saving its edits): the undo waits for it and undoes
    THAT restore — never "there is no restore to undo", never the restore before it."""
    sid, target = await two_turns(editor)
    end = editor.events_of("checkpointCreated")[-1]["checkpoint"]["id"]
    first = await restore(editor, target, "code")
    assert first["outcome"]["kind"] == "applied", first
    after_first = {p: (workspace / p).read_text("utf-8") for p in ("src/app.py", "README.md")}
    assert not (workspace / "counter.txt").exists()

    editor.hold_edits = asyncio.Event()
    second = asyncio.create_task(restore(editor, end, "code"))
    await asyncio.wait_for(editor.edit_held.wait(), 30)
    undo = asyncio.create_task(editor.request("retrace/restore/undoLast", {}))
    await asyncio.sleep(0.5)  # the undo reaches the server while the restore's edit is held
    editor.hold_edits.set()
    assert (await second)["outcome"]["kind"] == "applied"
    undone = await undo
    assert undone["undid"].startswith("Undid: Restore code to"), undone
    assert not (workspace / "counter.txt").exists(), "the second restore was undone"
    assert {p: (workspace / p).read_text("utf-8") for p in after_first} == after_first
    assert await head_of(editor, sid) is not None
