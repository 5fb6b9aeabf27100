"""``retrace mcp`` while the editor's server (``python -m retrace serve`` through the editor
stand-in of ``tests/lsp``) holds the store: reads open it read-only beside the server; a named
checkpoint and a restore are handed to that server over the relay socket, which runs them like
its own requests — through its gate, the editor told (``timeline/didChange``), the restore
applied by the editor with the editor's conflict rules (an unsaved buffer is a conflict too)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import (
    AUTO,
    EditorClient,
    fake_model,
    model_env,
    start_editor,
    stop_editor,
    wait_until,
)
from tests.mcp_server.mcp_support import Seeded, retrace_mcp

from retrace.offline import FakeModel
from retrace.relay import wire

pytestmark = pytest.mark.slow


@pytest.fixture
def model() -> Iterator[FakeModel]:
    m = fake_model("session")
    yield m
    m.stop()


@pytest.fixture
async def editor(
    seeded: Seeded, workspace: Path, store: Path, model: FakeModel
) -> AsyncIterator[EditorClient]:
    client = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    await wait_until(lambda: wire.socket_path(store).exists())
    yield client
    if not client.client.stopped:
        await stop_editor(client)


def told(editor: EditorClient, cp_id: str) -> bool:
    return any((c.get("checkpoint") or {}).get("id") == cp_id for c in editor.timeline_changes)


def raw(store: Path, request: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(60)
        conn.connect(str(wire.socket_path(store)))
        conn.sendall(wire.encode(request))
        answer = json.loads(wire.read_line(conn))
    assert isinstance(answer, dict)
    return answer


async def test_reads_and_writes_beside_the_running_server(
    editor: EditorClient, seeded: Seeded, workspace: Path, store: Path
) -> None:
    app = workspace / "src" / "app.py"
    async with retrace_mcp(workspace, store) as mcp:
        _, listed = await mcp.call("list_checkpoints", {"agent": "claude-code"})
        assert [c["id"] for c in listed["checkpoints"]] == [seeded.edit, seeded.write]
        _, shown = await mcp.call("show_checkpoint", {"id": seeded.edit})
        assert "+    return 42" in shown["patch"]

        (workspace / "notes.md").write_text("notes, more\n", "utf-8")
        _, made = await mcp.call("create_checkpoint", {"label": "named through the server"})
        assert made["via"] == "server"
        cp = made["checkpoint"]
        assert cp["session"] == "mcp" and cp["kind"] == "manual"
        await wait_until(lambda: told(editor, cp["id"]))

        # The server may take the notes.md edit as someone else's change (its deferred catch-up
        # can run at this first write, before the named checkpoint): then notes.md conflicts, and
        # this resolution decides it; otherwise the resolution names no conflict and does nothing.
        decided = {"resolutions": {"notes.md": "overwrite"}}
        _, preview = await mcp.call("restore_checkpoint", {"id": seeded.write, **decided})
        assert preview["via"] == "server"
        assert preview["outcome"] == "preview" and preview["applied"] is False, json.dumps(preview)
        assert {f["path"]: f["action"] for f in preview["files"]}["src/app.py"] == "overwrite"
        assert app.read_text("utf-8").endswith("return 42\n")
        assert editor.applied_edits == []  # a dry run asks nothing of the editor

        text, done = await mcp.call("restore_checkpoint", {"id": seeded.write, "confirm": True, **decided})
        assert done["outcome"] == "applied", text
        assert done["via"] == "server"
        assert app.read_text("utf-8").endswith("return 1\n")
        assert not (workspace / "notes.md").exists()
        assert editor.applied_edits, "the editor applied the restore"
        await wait_until(lambda: told(editor, done["checkpoint"]))

        _, undone = await mcp.call("restore_checkpoint", {"id": done["undo"], "confirm": True})
        assert undone["outcome"] == "applied"
        assert app.read_text("utf-8").endswith("return 42\n")
        assert (workspace / "notes.md").read_text("utf-8") == "notes, more\n"

        # The listing sees what the server recorded meanwhile, without the server's lock.
        _, listed = await mcp.call("list_checkpoints", {"kind": "restore"})
        assert [c["id"] for c in listed["checkpoints"]] == [undone["checkpoint"], done["checkpoint"]]


async def test_conflicts_through_the_server_refuse_unless_resolved(
    editor: EditorClient, seeded: Seeded, workspace: Path, store: Path
) -> None:
    app = workspace / "src" / "app.py"
    notes = workspace / "notes.md"
    app.write_text("def answer():\n    return 'mine'\n", "utf-8")  # changed on disk, unrecorded
    uri = editor.open_document("notes.md")
    editor.type_in_document(uri, "notes, typed and not saved\n")  # only the editor knows it
    async with retrace_mcp(workspace, store) as mcp:
        for _ in range(300):  # the buffer's change reaches the server on the editor's channel
            _, preview = await mcp.call("restore_checkpoint", {"id": seeded.write})
            if "notes.md" in preview["conflicts"]:
                break
            await asyncio.sleep(0.1)
        assert sorted(preview["conflicts"]) == ["notes.md", "src/app.py"]
        reasons = {f["path"]: f["conflict"] for f in preview["files"] if f["conflict"]}
        assert "unsaved" in reasons["notes.md"].lower() or "editor" in reasons["notes.md"].lower()

        _, refused = await mcp.call("restore_checkpoint", {"id": seeded.write, "confirm": True})
        assert refused["outcome"] == "conflict"
        assert sorted(refused["conflicts"]) == ["notes.md", "src/app.py"]
        assert "mine" in app.read_text("utf-8")
        assert notes.exists() and (workspace / "logo.bin").exists()
        assert editor.applied_edits == []

        _, done = await mcp.call(
            "restore_checkpoint",
            {"id": seeded.write, "confirm": True, "resolutions": {"src/app.py": "skip", "notes.md": "skip"}},
        )
        assert done["outcome"] == "applied"
        assert sorted(done["skipped"]) == ["notes.md", "src/app.py"]
        assert "mine" in app.read_text("utf-8")
        assert notes.read_text("utf-8") == "notes\n"
        assert not (workspace / "logo.bin").exists()

        message = await mcp.error("restore_checkpoint", {"id": "zzzzzzzz", "confirm": True})
        assert "zzzzzzzz" in message


async def test_the_relay_restore_refuses_force_and_bad_params(
    editor: EditorClient, seeded: Seeded, workspace: Path, store: Path
) -> None:
    def ask(params: dict[str, Any]) -> dict[str, Any]:
        return raw(store, {"v": 1, "method": "restore", "store": str(store), "params": params})

    answer = await asyncio.to_thread(ask, {"id": seeded.write, "dryRun": False, "force": True})
    assert answer["code"] == wire.INVALID_PARAMS and "force" in answer["error"]
    answer = await asyncio.to_thread(ask, {"id": seeded.write, "mode": "both"})
    assert answer["code"] == wire.INVALID_PARAMS
    answer = await asyncio.to_thread(ask, {"id": seeded.write, "resolutions": {"src/app.py": "clobber"}})
    assert answer["code"] == wire.INVALID_PARAMS
    answer = await asyncio.to_thread(ask, {"id": "zzzzzzzz"})
    assert answer["code"] == wire.FAILED and "zzzzzzzz" in answer["error"]
    answer = await asyncio.to_thread(ask, {"id": seeded.write})  # a dry run by default
    assert answer["ok"] is True
    assert answer["result"]["outcome"]["kind"] == "preview"
    assert (workspace / "src" / "app.py").read_text("utf-8").endswith("return 42\n")


async def test_an_untrusted_workspace_refuses_restores_from_outside(
    seeded: Seeded, workspace: Path, store: Path, model: FakeModel
) -> None:
    editor = await start_editor(
        workspace, store, env=model_env(model), settings=AUTO, init_options={"trusted": False}
    )
    try:
        await wait_until(lambda: wire.socket_path(store).exists())
        async with retrace_mcp(workspace, store) as mcp:
            message = await mcp.error("restore_checkpoint", {"id": seeded.write, "confirm": True})
            assert "untrusted" in message
            _, listed = await mcp.call("list_checkpoints", {"limit": 1})  # reading stays possible
            assert listed["checkpoints"]
    finally:
        await stop_editor(editor)
    assert (workspace / "src" / "app.py").read_text("utf-8").endswith("return 42\n")


async def test_an_editor_that_refuses_the_edit_fails_the_restore_and_changes_nothing(
    editor: EditorClient, seeded: Seeded, workspace: Path, store: Path
) -> None:
    editor.refuse_edits = "the user is typing"
    async with retrace_mcp(workspace, store) as mcp:
        text, out = await mcp.call("restore_checkpoint", {"id": seeded.write, "confirm": True})
        assert out["outcome"] == "failed" and out["applied"] is False
        assert out["rolledBack"] is True
        assert "the user is typing" in out["message"] and "the user is typing" in text
    assert (workspace / "src" / "app.py").read_text("utf-8").endswith("return 42\n")
    assert (workspace / "notes.md").exists()


async def test_a_relayed_restore_while_another_agents_turn_runs_needs_proceed(
    seeded: Seeded, workspace: Path, store: Path, model: FakeModel
) -> None:
    from retrace.engine import Engine
    from retrace.engine.store.events import TurnEvent

    with Engine.open(workspace, store, session_id="cli") as engine:
        engine.append_event(TurnEvent(turn_id="t-running", text="refactor"), session_id="claude-code-sess1")
    client = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        await wait_until(lambda: wire.socket_path(store).exists())
        app = workspace / "src" / "app.py"
        async with retrace_mcp(workspace, store) as mcp:
            message = await mcp.error("restore_checkpoint", {"id": seeded.write, "confirm": True})
            assert "Claude Code" in message or "claude-code" in message
            assert app.read_text("utf-8").endswith("return 42\n")
            text, done = await mcp.call(
                "restore_checkpoint", {"id": seeded.write, "confirm": True, "whileAgentRuns": "proceed"}
            )
            assert done["via"] == "server" and done["outcome"] == "applied", text
            assert app.read_text("utf-8").endswith("return 1\n")
    finally:
        await stop_editor(client)
