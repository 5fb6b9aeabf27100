"""Over the real server: ``retrace/agents/integrate`` writes and removes Retrace's hooks in the
agent's project settings (refused in an untrusted workspace), and a start-up brings a workspace
integrated with an interpreter that is gone up to this one, creating nothing elsewhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import start_editor, stop_editor, validate, wait_until

from retrace.app.hooks.claude_code import INSTALL as CLAUDE_CODE
from retrace.app.hooks.gemini_cli import INSTALL as GEMINI_CLI
from retrace.app.hooks.install import hook_command, is_ours, merge
from retrace.lsp.rpc import RETRACE_ERROR_CODE

pytestmark = pytest.mark.slow

PYTHON = str(Path(sys.executable).absolute())  # the server's interpreter: start_editor runs it


def commands(path: Path, agent: str) -> set[str]:
    doc = json.loads(path.read_text())
    return {
        hook["command"]
        for groups in doc.get("hooks", {}).values()
        for group in groups
        for hook in group["hooks"]
        if is_ours(hook, agent)
    }


async def test_integrate_and_remove_through_the_server(workspace: Path, store: Path) -> None:
    editor = await start_editor(workspace, store)
    try:
        result: dict[str, Any] = await editor.request("retrace/agents/integrate", {"agent": "claude-code"})
        validate("#/$defs/AgentIntegrateResult", result)
        path = workspace / CLAUDE_CODE.settings_rel
        assert result["file"] == str(path)
        assert result["action"] == "added"
        assert commands(path, "claude-code") == {hook_command(CLAUDE_CODE, PYTHON)}
        again = await editor.request("retrace/agents/integrate", {"agent": "claude-code"})
        assert again["action"] == "unchanged"
        gone = await editor.request("retrace/agents/integrate", {"agent": "claude-code", "remove": True})
        assert gone["action"] == "removed"
        assert not path.exists()
        error = await editor.request_error("retrace/agents/integrate", {"agent": "cline"})
        assert error.code == -32602  # invalid params: the agent is one of the known ones
    finally:
        await stop_editor(editor)


async def test_a_broken_settings_file_is_a_retrace_error_and_stays(workspace: Path, store: Path) -> None:
    path = workspace / GEMINI_CLI.settings_rel
    path.parent.mkdir()
    path.write_text("{ // comment\n}")
    editor = await start_editor(workspace, store)
    try:
        error = await editor.request_error("retrace/agents/integrate", {"agent": "gemini-cli"})
        assert error.code == RETRACE_ERROR_CODE
        assert isinstance(error.data, dict) and error.data["code"] == "agentSettingsInvalid"
        assert "not valid JSON" in error.message
    finally:
        await stop_editor(editor)
    assert path.read_text() == "{ // comment\n}"


async def test_an_untrusted_workspace_is_refused_and_nothing_is_written(workspace: Path, store: Path) -> None:
    editor = await start_editor(workspace, store, init_options={"trusted": False})
    try:
        error = await editor.request_error("retrace/agents/integrate", {"agent": "claude-code"})
        assert error.code == RETRACE_ERROR_CODE
        assert isinstance(error.data, dict) and error.data["code"] == "workspaceUntrusted"
    finally:
        await stop_editor(editor)
    assert not (workspace / ".claude").exists()


async def test_start_up_moves_a_stale_integration_to_this_interpreter_and_creates_nothing(
    workspace: Path, store: Path
) -> None:
    path = workspace / GEMINI_CLI.settings_rel
    path.parent.mkdir()
    stale = merge({"theme": "dark"}, GEMINI_CLI, hook_command(GEMINI_CLI, "/gone/after/update/python")).doc
    path.write_text(json.dumps(stale))
    editor = await start_editor(workspace, store)
    try:
        await editor.request(
            "retrace/timeline/get", {}
        )  # start-up's background work follows the first answer
        await wait_until(lambda: commands(path, "gemini-cli") == {hook_command(GEMINI_CLI, PYTHON)})
        assert json.loads(path.read_text())["theme"] == "dark"
    finally:
        await stop_editor(editor)
    assert not (workspace / ".claude").exists()
