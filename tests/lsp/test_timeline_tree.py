"""The real server sends the timeline tree in one response, and it survives a conversation
restore plus a restart: abandoned turns keep their prompts, tool statuses come from the journal,
restores sit in place in the session's story and say what they restored to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import (
    AUTO,
    EditorClient,
    model_env,
    start_editor,
    stop_editor,
    validate,
    wait_until,
)

from retrace.offline import FakeModel

pytestmark = pytest.mark.e2e


def turns_of(story: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in story["items"] if i["kind"] == "turn"]


def rows_of(story: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in story["items"]:
        out.extend(item["rows"] if item["kind"] == "turn" else [item])
    return out


async def tree(editor: EditorClient, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/timeline/tree", params)
    validate("#/$defs/TimelineTreeResult", result)
    return result


async def test_tree_survives_conversation_restore_and_restart(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    editor = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    first = await editor.run_turn("first task")
    session_id = first["sessionId"]
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", first["turnId"])]
    # Each new checkpoint's notification carries its row, described, so clients need no refetch.
    rows = {c["row"]["checkpoint"]["id"]: c for c in editor.timeline_changes if c.get("row")}
    assert set(rows) >= {cp["id"] for cp in created}
    edit_change = rows[created[1]["id"]]
    assert edit_change["row"]["summary"] == "‘return 1’ → ‘return 2’ · +1 −1"
    assert edit_change["row"]["toolStatus"] == "ok" and edit_change["turnId"] == first["turnId"]
    for change in editor.timeline_changes:
        validate("#/$defs/TimelineDidChange", change)
    await editor.run_turn("second task", session_id=session_id)
    restored = await editor.request("retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "both"})
    assert restored["outcome"]["kind"] == "applied", restored
    (workspace / "notes.txt").write_text("changed by hand\n", "utf-8")
    await editor.run_turn("third task", session_id=session_id)
    await stop_editor(editor)

    reloaded = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        # The first answer comes before the walk for changes made while closed; that walk's
        # ``external`` checkpoint then reaches the client as a timeline change.
        await tree(reloaded)
        await wait_until(lambda: bool(reloaded.timeline_changes))
        [caught_up] = reloaded.timeline_changes
        validate("#/$defs/TimelineDidChange", caught_up)
        assert caught_up["row"]["checkpoint"]["kind"] == "external"
        result = await tree(reloaded)
        assert result["head"] == caught_up["head"]
        agent = [s for s in result["sessions"] if not s["workspace"]]
        assert [s["session"]["id"] for s in agent] == [session_id], "one story for the one agent session"
        [story] = agent
        turns = turns_of(story)
        assert [t["prompt"] for t in turns] == ["first task", "second task", "third task"]
        assert [t["abandoned"] for t in turns] == [False, True, False]
        assert turns[2]["forkedFrom"] == created[0]["id"]
        assert [r["checkpoint"]["tool"] for r in turns[0]["rows"]] == [
            "write_file",
            "edit_file",
            "run_command",
        ]
        assert {r["toolStatus"] for r in turns[0]["rows"]} == {"ok"}
        edit = turns[0]["rows"][1]
        assert edit["title"] == "edit_file: src/app.py"
        assert edit["summary"] == "‘return 1’ → ‘return 2’ · +1 −1"
        loose = [i for i in story["items"] if i["kind"] == "row"]
        kinds = [r["checkpoint"]["kind"] for r in loose]
        assert "restore" in kinds and "external" in kinds, kinds
        [restore_row] = [r for r in loose if r["checkpoint"]["kind"] == "restore"]
        assert restore_row["title"] == "Restored code to ‘write_file: hello.txt’"
        assert restore_row["branch"] is True
        # Chronological: turn 2, then the restore, then turn 3.
        order = [i.get("prompt") or i.get("checkpoint", {}).get("kind") for i in story["items"]]
        assert order.index("second task") < order.index("restore") < order.index("third task")
        # No other story carries a restore or a safety capture.
        for other in result["sessions"]:
            if other is not story:
                assert {r["checkpoint"]["kind"] for r in rows_of(other)} <= {"baseline", "external"}
        assert story["session"]["title"] == "first task"
        [workspace_story] = [s for s in result["sessions"] if s["workspace"]]
        assert [r["title"] for r in rows_of(workspace_story)] == ["Starting point"]
        heads = [r for s in result["sessions"] for r in rows_of(s) if r["isHead"]]
        assert [r["checkpoint"]["id"] for r in heads] == [result["head"]]

        paged = await tree(reloaded, sessionId=session_id, maxRows=2)
        [only] = paged["sessions"]
        assert len(rows_of(only)) == 2 and only["rowsOmitted"] == only["rowCount"] - 2
        sessions = await reloaded.request("retrace/session/list")
        assert session_id in [s["id"] for s in sessions["sessions"]]
    finally:
        await stop_editor(reloaded)
