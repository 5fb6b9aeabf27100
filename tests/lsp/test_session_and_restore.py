"""The real server process, driven like VS Code drives it: a multi-turn agent session over the
fake model (real HTTP), then restores of every mode through workspace/applyEdit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from tests.lsp.lsp_support import APP_PY, EditorClient
from tests.oracles import file_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EDITOR_STATE = {
    "openEditors": [
        {
            "uri": "file:///x/src/app.py",
            "path": "src/app.py",
            "viewColumn": 1,
            "isActive": True,
            "isDirty": False,
            "selections": [{"anchor": {"line": 1, "character": 4}, "active": {"line": 1, "character": 10}}],
            "visibleRanges": [{"start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}}],
        }
    ],
    "activeEditor": "file:///x/src/app.py",
}


async def first_turn(editor: EditorClient) -> tuple[str, list[dict[str, Any]]]:
    """Run turn 1; returns the session id and its three tool checkpoints."""
    editor.notify("retrace/editor/didChangeState", EDITOR_STATE)
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    return result["sessionId"], created


async def restore(editor: EditorClient, cp_id: str, mode: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request(
        "retrace/checkpoint/restore", {"id": cp_id, "mode": mode, **extra}
    )
    return result


async def test_multi_turn_session_one_checkpoint_per_tool_call(editor: EditorClient, workspace: Path) -> None:
    session_id, created = await first_turn(editor)
    assert [cp["tool"] for cp in created] == ["write_file", "edit_file", "run_command"]
    for cp in created:
        assert cp["kind"] == "tool"
        assert cp["sessionId"] == session_id
        assert cp["editorState"] == EDITOR_STATE
    assert (workspace / "hello.txt").read_text("utf-8") == "hello 👋\n"
    assert "return 2" in (workspace / "src" / "app.py").read_text("utf-8")
    assert (workspace / "counter.txt").read_text() == "x\n"
    assert (workspace / "gen" / "out.txt").read_text() == "out\n"
    shell_cp = created[2]
    assert {f["path"] for f in shell_cp["files"]} == {"counter.txt", "gen/out.txt"}

    second = await editor.run_turn("second task", session_id=session_id)
    assert second["sessionId"] == session_id
    [readme_cp] = [e["checkpoint"] for e in editor.events_of("checkpointCreated", second["turnId"])]
    assert readme_cp["tool"] == "edit_file"
    assert "Sample (edited)" in (workspace / "README.md").read_text("utf-8")

    timeline = await editor.request("retrace/timeline/get", {"sessionId": session_id})
    ids = [cp["id"] for cp in timeline["checkpoints"]]
    assert [cp["id"] for cp in created] + [readme_cp["id"]] == [
        i for i in ids if i in {c["id"] for c in [*created, readme_cp]}
    ]
    assert timeline["head"] == readme_cp["id"]
    [info] = [s for s in timeline["sessions"] if s["id"] == session_id]
    assert info["title"].startswith("first task")
    assert info["running"] is False
    # Timeline notifications accompanied every checkpoint.
    notified = {c["checkpoint"]["id"] for c in editor.timeline_changes if c.get("checkpoint")}
    assert {cp["id"] for cp in created} <= notified

    detail = await editor.request("retrace/checkpoint/get", {"id": created[1]["id"]})
    assert detail["filesChanged"] == 1 and detail["additions"] == 1 and detail["deletions"] == 1
    assert detail["isHead"] is False

    diff = await editor.request("retrace/checkpoint/diff", {"from": created[0]["id"], "to": created[1]["id"]})
    assert [f["path"] for f in diff["files"]] == ["src/app.py"]
    assert "-    return 1" in diff["patch"] and "+    return 2" in diff["patch"]
    assert diff["truncated"] is False
    small = await editor.request("retrace/checkpoint/diff", {"from": created[0]["id"], "maxPatchBytes": 40})
    assert small["truncated"] is True and len(small["patch"].encode()) <= 40

    old = await editor.request(
        "retrace/checkpoint/fileContent", {"id": created[0]["id"], "path": "src/app.py"}
    )
    assert old == {**old, "exists": True, "text": APP_PY, "binary": False, "encoding": "utf-8"}
    now = await editor.request("retrace/checkpoint/fileContent", {"id": "current", "path": "hello.txt"})
    assert now["text"] == "hello 👋\n"
    binary = await editor.request("retrace/checkpoint/fileContent", {"id": "current", "path": "logo.bin"})
    assert binary["binary"] is True and binary["text"] is None and binary["size"] == 256
    absent = await editor.request(
        "retrace/checkpoint/fileContent", {"id": created[0]["id"], "path": "gen/out.txt"}
    )
    assert absent["exists"] is False

    sessions = await editor.request("retrace/session/list")
    assert session_id in [s["id"] for s in sessions["sessions"]]
    found = await editor.request(
        "retrace/toolCalls/search", {"tool": "run_command", "inputContains": "counter"}
    )
    assert len(found["records"]) == 1 and found["records"][0]["checkpointId"] == shell_cp["id"]
    stats = await editor.request("retrace/stats")
    assert stats["store"]["checkpoints"] >= 5 and stats["toolCalls"] == 4
    conversation = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    assert conversation["head"] is not None and len(conversation["messages"]) >= 8
    assert conversation["messagesOmitted"] == 0

    # A long conversation is fetched as its newest messages (the chat shows a tail, and it
    # reloads after every turn): the tail is the full answer's tail, the rest only counted.
    everything = conversation["messages"]
    for limit in (1, 3, len(everything) - 1, len(everything), len(everything) + 5):
        tail = await editor.request("retrace/conversation/get", {"sessionId": session_id, "limit": limit})
        assert tail["messages"] == everything[-limit:], limit
        assert tail["messagesOmitted"] == max(0, len(everything) - limit)
        assert tail["head"] == conversation["head"] and tail["usage"] == conversation["usage"]
        sent_uses = {b["id"] for m in tail["messages"] for b in m["content"] if b.get("type") == "tool_use"}
        assert set(tail["toolStatuses"]) <= sent_uses
        statuses = conversation["toolStatuses"]
        assert {k: v for k, v in statuses.items() if k in sent_uses} == tail["toolStatuses"]


async def test_restore_code_through_the_editor_then_undo(editor: EditorClient, workspace: Path) -> None:
    _, created = await first_turn(editor)
    after_turn = file_bytes(workspace)
    before = await editor.request(
        "retrace/checkpoint/fileContent", {"id": created[0]["id"], "path": "src/app.py"}
    )

    preview = await restore(editor, created[0]["id"], "code", dryRun=True)
    assert preview["outcome"]["kind"] == "preview" and preview["outcome"]["dryRun"] is True
    planned = {f["path"]: f["action"] for f in preview["outcome"]["plan"]["files"]}
    assert planned == {"src/app.py": "overwrite", "counter.txt": "delete", "gen/out.txt": "delete"}
    assert file_bytes(workspace) == after_turn, "a dry run changed the workspace"
    assert editor.applied_edits == []

    result = await restore(editor, created[0]["id"], "code")
    outcome = result["outcome"]
    assert outcome["kind"] == "applied", outcome
    assert outcome["checkpoint"]["kind"] == "restore"
    assert outcome["checkpoint"]["restoredFrom"] == created[0]["id"]
    assert (workspace / "src" / "app.py").read_text("utf-8") == before["text"]
    assert not (workspace / "counter.txt").exists()
    assert not (workspace / "gen").exists(), "the directory emptied by the restore was left behind"
    assert (workspace / "hello.txt").exists()

    # It went through the editor: one versioned text edit with a minimal change, plus deletes.
    [edit] = editor.applied_edits
    changes = edit.edit.document_changes or []
    text_edits = [c for c in changes if isinstance(c, lsp.TextDocumentEdit)]
    deletes = sorted(Path(c.uri).name for c in changes if isinstance(c, lsp.DeleteFile))
    assert deletes == ["counter.txt", "out.txt"]
    [app_edit] = text_edits
    assert app_edit.text_document.uri.endswith("/src/app.py")
    assert [e.new_text for e in app_edit.edits if isinstance(e, lsp.TextEdit)] == ["1"]
    assert any(app_edit.text_document.uri in uris for uris in editor.saved)
    # The editor state of the restored checkpoint went back to the client.
    assert editor.restored_states[-1] == EDITOR_STATE
    assert any(c["head"] == outcome["checkpoint"]["id"] for c in editor.timeline_changes)

    # Undo = restore the restore's parent.
    undo = await restore(editor, outcome["checkpoint"]["parent"], "code")
    assert undo["outcome"]["kind"] == "applied", undo
    assert file_bytes(workspace) == after_turn

    again = await restore(editor, outcome["checkpoint"]["parent"], "code")
    assert again["outcome"]["kind"] == "nothingToRestore"

    # "Restore this file": only the given path changes.
    one = await restore(editor, created[0]["id"], "code", paths=["src/app.py"])
    assert one["outcome"]["kind"] == "applied", one
    assert (workspace / "src" / "app.py").read_text("utf-8") == before["text"]
    assert (workspace / "counter.txt").exists() and (workspace / "gen" / "out.txt").exists()


async def test_conversation_and_both_modes(editor: EditorClient, workspace: Path) -> None:
    session_id, created = await first_turn(editor)
    full = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    files_before = file_bytes(workspace)

    conv = await restore(editor, created[0]["id"], "conversation")
    assert conv["outcome"]["kind"] == "nothingToRestore"
    assert conv["conversationHead"] is not None
    assert file_bytes(workspace) == files_before, "a conversation restore touched files"
    moved = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    assert moved["head"] == conv["conversationHead"] != full["head"]
    assert len(moved["messages"]) < len(full["messages"])

    both = await restore(editor, created[1]["id"], "both")
    assert both["outcome"]["kind"] == "applied", both
    assert both["conversationHead"] is not None
    assert not (workspace / "counter.txt").exists()
    assert "return 2" in (workspace / "src" / "app.py").read_text("utf-8")

    # The conversation stays valid for the model after restores: the next turn is accepted.
    follow = await editor.run_turn("second task", session_id=session_id)
    assert editor.events_of("turnFinished", follow["turnId"])[0]["stopReason"] == "end_turn"


async def test_conflicts_are_never_overwritten_silently(editor: EditorClient, workspace: Path) -> None:
    _, created = await first_turn(editor)
    app = workspace / "src" / "app.py"
    app.write_text(app.read_text("utf-8") + "# the user's own line\n", "utf-8")
    user_text = app.read_text("utf-8")

    conflict = await restore(editor, created[0]["id"], "code")
    assert conflict["outcome"]["kind"] == "conflict", conflict
    assert [f["path"] for f in conflict["outcome"]["files"] if f["status"] == "conflict"] == ["src/app.py"]
    assert app.read_text("utf-8") == user_text
    assert (workspace / "counter.txt").exists(), "a conflicting restore changed other files"
    assert editor.applied_edits == []

    [conflicted] = [f for f in conflict["outcome"]["plan"]["files"] if f["action"] == "conflict"]
    merged = conflicted["conflict"]["mergedText"]
    assert merged is not None and "return 1" in merged and "the user's own line" in merged

    preview = await restore(
        editor, created[0]["id"], "code", resolutions={"src/app.py": "merge"}, dryRun=True
    )
    assert preview["outcome"]["kind"] == "preview" and app.read_text("utf-8") == user_text
    merge = await restore(editor, created[0]["id"], "code", resolutions={"src/app.py": "merge"})
    assert merge["outcome"]["kind"] == "applied", merge
    assert app.read_text("utf-8") == merged
    # Undo the merge restore, then try the other resolutions from the same conflicted state.
    undo = await restore(editor, merge["outcome"]["checkpoint"]["parent"], "code", force=True)
    assert undo["outcome"]["kind"] == "applied", undo
    assert app.read_text("utf-8") == user_text and (workspace / "counter.txt").exists()

    # The user edits again (unrecorded): skip keeps it, force overwrites it but keeps it restorable.
    app.write_text(user_text + "# and another\n", "utf-8")
    user_text = app.read_text("utf-8")
    skip = await restore(editor, created[0]["id"], "code", resolutions={"src/app.py": "skip"})
    assert skip["outcome"]["kind"] == "applied", skip
    assert app.read_text("utf-8") == user_text
    assert not (workspace / "counter.txt").exists()

    forced = await restore(editor, created[0]["id"], "code", force=True)
    assert forced["outcome"]["kind"] == "applied", forced
    assert "return 1" in app.read_text("utf-8") and "the user's own line" not in app.read_text("utf-8")
    # The user's work is not lost: it is in the timeline before the restore.
    timeline = await editor.request("retrace/timeline/get", {})
    kept = False
    for cp in timeline["checkpoints"]:
        content = await editor.request(
            "retrace/checkpoint/fileContent", {"id": cp["id"], "path": "src/app.py"}
        )
        kept = kept or content["text"] == user_text
    assert kept, "the overwritten user edit is not restorable"


async def test_unsaved_editor_buffer_is_a_conflict_and_versions_are_honoured(
    editor: EditorClient, workspace: Path
) -> None:
    _, created = await first_turn(editor)
    uri = editor.open_document("src/app.py")
    editor.type_in_document(uri, (workspace / "src" / "app.py").read_text("utf-8") + "# unsaved\n")

    preview = await restore(editor, created[0]["id"], "code", dryRun=True)
    assert preview["outcome"]["kind"] == "conflict" and preview["outcome"]["dryRun"] is True, preview
    conflict = await restore(editor, created[0]["id"], "code")
    assert conflict["outcome"]["kind"] == "conflict", conflict
    assert conflict["outcome"]["files"][0]["detail"] == "unsaved changes in the editor"
    assert editor.applied_edits == []

    forced = await restore(editor, created[0]["id"], "code", force=True)
    assert forced["outcome"]["kind"] == "applied", forced
    [edit] = editor.applied_edits
    [doc_edit] = [c for c in edit.edit.document_changes or [] if isinstance(c, lsp.TextDocumentEdit)]
    assert doc_edit.text_document.version == 2  # the open document's version, so stale buffers are refused
    assert editor.documents[uri].text == (workspace / "src" / "app.py").read_text("utf-8")
    assert "return 1" in editor.documents[uri].text


async def test_refused_workspace_edit_fails_cleanly(editor: EditorClient, workspace: Path) -> None:
    _, created = await first_turn(editor)
    before = file_bytes(workspace)
    editor.refuse_edits = "the user said no"
    failed = await restore(editor, created[0]["id"], "code")
    assert failed["outcome"]["kind"] == "failed"
    assert "the user said no" in failed["outcome"]["error"]
    assert failed["outcome"]["rolledBack"] is True
    assert file_bytes(workspace) == before
    editor.refuse_edits = None
    retry = await restore(editor, created[0]["id"], "code")
    assert retry["outcome"]["kind"] == "applied", retry


async def test_summarize_from_and_up_to(editor: EditorClient) -> None:
    session_id, created = await first_turn(editor)
    up_to = await editor.request(
        "retrace/conversation/summarize", {"id": created[1]["id"], "direction": "upTo"}
    )
    assert up_to["kind"] == "summary" and up_to["sessionId"] == session_id
    conversation = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    assert conversation["head"] is not None
    assert any(m["kind"] == "summary" for m in conversation["messages"])

    # Back on the original branch, then compress what came after the first tool call.
    await restore(editor, created[2]["id"], "conversation")
    from_cp = await editor.request(
        "retrace/conversation/summarize", {"id": created[0]["id"], "direction": "from"}
    )
    assert from_cp["kind"] == "summary"
    timeline = await editor.request("retrace/timeline/get", {"sessionId": session_id})
    assert [c["kind"] for c in timeline["checkpoints"]].count("summary") == 2
    # The summarized conversation is still one the model accepts.
    follow = await editor.run_turn("second task", session_id=session_id)
    assert editor.events_of("turnFinished", follow["turnId"])[0]["stopReason"] == "end_turn"
