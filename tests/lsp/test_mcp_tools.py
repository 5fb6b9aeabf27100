"""Over the real server: MCP servers configured in ``retrace.mcp.servers`` start at the first
turn, their tool call ends in a checkpoint, they stop at shutdown; an untrusted workspace starts
none."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import model_env, start_editor, stop_editor, wait_until

from retrace.offline import FakeModel, Scenario

pytestmark = pytest.mark.slow


SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "files_server.py")
WRITE = "mcp__files__write_note"


def settings(pid_file: Path) -> dict[str, Any]:
    return {
        "permissions": {"write": "auto", "command": "auto", "mcp": "auto"},
        "mcp": {
            "servers": {
                "files": {"command": sys.executable, "args": [SERVER], "env": {"PID_FILE": str(pid_file)}}
            }
        },
    }


def model() -> FakeModel:
    fake = FakeModel(
        Scenario.model_validate(
            {
                "responses": [
                    {"toolCalls": [{"name": WRITE, "input": {"path": "mcp.txt", "text": "over lsp"}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    fake.start()
    return fake


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_an_mcp_tool_call_over_the_server_is_checkpointed(
    workspace: Path, store: Path, tmp_path: Path
) -> None:
    fake = model()
    pid_file = tmp_path / "mcp.pid"
    editor = await start_editor(workspace, store, env=model_env(fake), settings=settings(pid_file))
    try:
        assert not pid_file.exists()  # started lazily, at the first turn
        result = await editor.run_turn("write through mcp")
        finished = editor.events_of("toolCallFinished")
        assert [(e["tool"], e["status"], e["changedPaths"]) for e in finished] == [(WRITE, "ok", ["mcp.txt"])]
        assert (workspace / "mcp.txt").read_text() == "over lsp"
        timeline = await editor.request("retrace/timeline/get", {"sessionId": result["sessionId"]})
        (cp,) = [c for c in timeline["checkpoints"] if c.get("tool") == WRITE]
        assert cp["kind"] == "tool"
        pid = int(pid_file.read_text())
        assert running(pid)
    finally:
        await stop_editor(editor)
        fake.stop()
    await wait_until(lambda: not running(pid))  # stopped at shutdown


async def test_an_untrusted_workspace_starts_no_mcp_server(
    workspace: Path, store: Path, tmp_path: Path
) -> None:
    fake = model()
    pid_file = tmp_path / "mcp.pid"
    editor = await start_editor(
        workspace, store, env=model_env(fake), settings=settings(pid_file), init_options={"trusted": False}
    )
    try:
        assert (await editor.request("retrace/server/state"))["trusted"] is False
        await editor.request_error("retrace/agent/prompt", {"text": "write through mcp"})
    finally:
        await stop_editor(editor)
        fake.stop()
    assert not pid_file.exists()
    assert not (workspace / "mcp.txt").exists()
