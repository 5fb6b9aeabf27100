"""Over the real server: an untrusted workspace gets a read-only timeline, and the scripted demo
model answers only in a demo folder. With no key and no endpoint, a real folder's agent turn is
refused at once and nothing in the workspace changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.lsp.lsp_support import AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor
from tests.oracles import file_bytes

from retrace.bootstrap import DEMO_MARKER, NO_KEY_MESSAGE
from retrace.lsp.handlers.lifecycle import initialization_options
from retrace.lsp.rpc import RETRACE_ERROR_CODE

pytestmark = pytest.mark.slow


NO_MODEL_ENV = {
    "ANTHROPIC_API_KEY": "",
    "ANTHROPIC_BASE_URL": "",
    "ANTHROPIC_AUTH_TOKEN": "",
    "RETRACE_FAKE_MODEL": "",
}


async def retrace_error(editor: EditorClient, method: str, params: dict[str, Any]) -> tuple[str, str]:
    error = await editor.request_error(method, params)
    assert error.code == RETRACE_ERROR_CODE, (method, error.code, error.message)
    data = error.data if isinstance(error.data, dict) else {}
    return str(data.get("code")), error.message


async def test_no_key_in_a_real_folder_refuses_the_turn_untouched(workspace: Path, store: Path) -> None:
    before = file_bytes(workspace)
    editor = await start_editor(workspace, store, env=NO_MODEL_ENV, settings=AUTO)
    try:
        state = await editor.request("retrace/server/state")
        assert state == {"modelMode": "noKey", "trusted": True, "storeDir": str(store)}
        baseline = await editor.request("retrace/timeline/get", {})
        code, message = await retrace_error(editor, "retrace/agent/prompt", {"text": "do the demo"})
        assert code == "noApiKey"
        assert message == NO_KEY_MESSAGE
        assert "Set API Key" in message and "Try the Demo" in message
        assert editor.events == []  # no turn started
        assert await editor.request("retrace/timeline/get", {}) == baseline
    finally:
        await stop_editor(editor)
    assert file_bytes(workspace) == before


async def test_the_demo_model_answers_in_a_demo_folder(workspace: Path, store: Path) -> None:
    (workspace / DEMO_MARKER).write_text('{"demo": true}\n', "utf-8")
    editor = await start_editor(workspace, store, env=NO_MODEL_ENV, settings=AUTO)
    try:
        assert (await editor.request("retrace/server/state"))["modelMode"] == "demo"
        turn = await editor.run_turn("show me around")
        assert editor.events_of("checkpointCreated", turn["turnId"])
        assert (workspace / "src" / "greeting.py").exists()  # the scripted demo ran
    finally:
        await stop_editor(editor)


async def test_a_configured_model_is_live(workspace: Path, store: Path) -> None:
    model = fake_model("session")
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        state = await editor.request("retrace/server/state")
        assert state == {"modelMode": "live", "trusted": True, "storeDir": str(store)}
    finally:
        await stop_editor(editor)
        model.stop()


async def test_an_untrusted_workspace_has_a_read_only_timeline(workspace: Path, store: Path) -> None:
    """Set up a history while trusted, then reopen untrusted: reading works, every action that
    runs the agent or changes files is refused with workspaceUntrusted, and the disk stays put."""
    model = fake_model("session")
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        await editor.run_turn("first task")
    finally:
        await stop_editor(editor)
    before = file_bytes(workspace)
    untrusted = {"trusted": False}
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO, init_options=untrusted)
    try:
        assert (await editor.request("retrace/server/state"))["trusted"] is False
        timeline = await editor.request("retrace/timeline/get", {})
        first, last = timeline["checkpoints"][0]["id"], timeline["checkpoints"][-1]["id"]
        assert await editor.request("retrace/checkpoint/get", {"id": first})
        refused = [
            ("retrace/agent/prompt", {"text": "again"}),
            ("retrace/checkpoint/restore", {"id": first, "mode": "code"}),
            ("retrace/restore/undoLast", {}),
            ("retrace/conversation/summarize", {"id": last, "direction": "upTo"}),
            ("retrace/bookmark/create", {"name": "x"}),
            ("retrace/bookmark/name", {"checkpointId": first, "name": "x"}),
        ]
        for method, params in refused:
            code, message = await retrace_error(editor, method, params)
            assert code == "workspaceUntrusted", (method, code, message)
            assert "untrusted workspace" in message
        assert editor.events == []
    finally:
        await stop_editor(editor)
        model.stop()
    assert file_bytes(workspace) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


@given(flag=json_values, valid=st.booleans())
def test_only_an_explicit_true_or_no_flag_means_trusted(flag: Any, valid: bool) -> None:
    """Whatever else the options hold (valid or not), a trust flag other than ``true`` distrusts."""
    raw: dict[str, Any] = {"trusted": flag, "storeDir": "/tmp/s" if valid else 7}
    assert initialization_options(raw).trusted is (flag is True)
    assert initialization_options({"storeDir": "/tmp/s"}).trusted is True
