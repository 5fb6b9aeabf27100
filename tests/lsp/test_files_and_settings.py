"""Restores of what a WorkspaceEdit cannot carry (binary, symlink, exec bit) next to text edits;
permission requests answered by the client; settings pulled again after a change."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from tests.lsp.lsp_support import AUTO, SCENARIOS, fake_model, model_env, start_editor, stop_editor
from tests.oracles import entries

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_binary_symlink_and_exec_bit_restore_next_to_text_edits(workspace: Path, store: Path) -> None:
    model = fake_model("files")
    editor = await start_editor(
        workspace, store, env=model_env(model), settings={"permissions": {"write": "auto", "command": "auto"}}
    )
    try:
        original = entries(workspace)
        turn = await editor.run_turn("files task")
        [cp] = [e["checkpoint"] for e in editor.events_of("checkpointCreated", turn["turnId"])]
        changed = entries(workspace)
        assert changed["link.md"][0] == "symlink" and changed["tool.sh"][2] is True

        result = await editor.request("retrace/checkpoint/restore", {"id": cp["parent"], "mode": "code"})
        assert result["outcome"]["kind"] == "applied", result
        assert entries(workspace) == original
        [edit] = editor.applied_edits
        doc_uris = [
            c.text_document.uri
            for c in edit.edit.document_changes or []
            if isinstance(c, lsp.TextDocumentEdit)
        ]
        assert [uri.rsplit("/", 1)[-1] for uri in doc_uris] == [
            "notes.txt"
        ]  # the CRLF text file went through the editor
        assert any("written directly to disk" in m.message for m in editor.client.log_messages)
        renames = [c for c in edit.edit.document_changes or [] if isinstance(c, lsp.RenameFile)]
        assert [(r.old_uri.rsplit("/", 2)[-2:], r.new_uri.rsplit("/", 1)[-1]) for r in renames] == [
            (["docs", "README.md"], "README.md")
        ]
        assert not (workspace / "docs").exists(), "the directory emptied by the restore was left behind"

        redo = await editor.request("retrace/checkpoint/restore", {"id": cp["id"], "mode": "code"})
        assert redo["outcome"]["kind"] == "applied", redo
        assert entries(workspace) == changed
    finally:
        await stop_editor(editor)
        model.stop()


async def test_permissions_are_asked_and_settings_reload_without_restart(
    workspace: Path, store: Path
) -> None:
    model = fake_model("session")
    editor = await start_editor(
        workspace, store, env=model_env(model), settings={"permissions": {"write": "ask", "command": "ask"}}
    )
    try:
        editor.permission_answers.extend(["deny", "allow", "allowAlways"])
        turn = await editor.run_turn("first task")
        asked = [(r["tool"], r["sessionId"]) for r in editor.permission_requests]
        assert asked == [
            ("write_file", turn["sessionId"]),
            ("edit_file", turn["sessionId"]),
            ("run_command", turn["sessionId"]),
        ]
        finished = {e["tool"]: e["status"] for e in editor.events_of("toolCallFinished", turn["turnId"])}
        assert finished == {"write_file": "denied", "edit_file": "ok", "run_command": "ok"}
        assert not (workspace / "hello.txt").exists()
        tools = [e["checkpoint"]["tool"] for e in editor.events_of("checkpointCreated", turn["turnId"])]
        assert tools == ["edit_file", "run_command"], "a denied call must not make a checkpoint"

        editor.change_settings({"permissions": {"write": "auto", "command": "auto"}})
        asked_before = len(editor.permission_requests)
        second = await editor.run_turn("second task", session_id=turn["sessionId"])
        assert editor.events_of("toolCallFinished", second["turnId"])[0]["status"] == "ok"
        assert len(editor.permission_requests) == asked_before, "the new settings were not pulled"
    finally:
        await stop_editor(editor)
        model.stop()


async def test_offline_mode_starts_the_fake_model_in_the_server(workspace: Path, store: Path) -> None:
    env = {
        "RETRACE_FAKE_MODEL": str(SCENARIOS / "session.json"),
        "ANTHROPIC_API_KEY": "",
        "ANTHROPIC_BASE_URL": "",
    }
    editor = await start_editor(workspace, store, env=env, settings=AUTO)
    try:
        turn = await editor.run_turn("first task")
        assert len(editor.events_of("checkpointCreated", turn["turnId"])) == 3
        assert any("fake Messages API" in m.message for m in editor.client.log_messages)
    finally:
        await stop_editor(editor)
