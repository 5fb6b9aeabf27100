"""Bad input gets a clear JSON-RPC error, and the server keeps answering."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor

from retrace.lsp.rpc import RETRACE_ERROR_CODE
from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

# (method, params, expected code, fragment of the message)
BAD_REQUESTS: list[tuple[str, object, int, str]] = [
    ("retrace/checkpoint/get", {}, INVALID_PARAMS, "id: Field required"),
    ("retrace/checkpoint/get", {"id": 42}, INVALID_PARAMS, "id: Input should be a valid string"),
    ("retrace/checkpoint/get", {"id": "x", "bogus": 1}, INVALID_PARAMS, "bogus"),
    ("retrace/checkpoint/restore", {"id": "x", "mode": "everything"}, INVALID_PARAMS, "mode"),
    ("retrace/checkpoint/diff", [1, 2], INVALID_PARAMS, "params must be a JSON object"),
    ("retrace/agent/prompt", {"text": ""}, INVALID_PARAMS, "text"),
    ("retrace/checkpoint/get", {"id": "zzzzzzzzzzzz"}, RETRACE_ERROR_CODE, "unknown checkpoint"),
    ("retrace/checkpoint/diff", {"from": "nope"}, RETRACE_ERROR_CODE, "unknown checkpoint"),
    (
        "retrace/checkpoint/fileContent",
        {"id": "current", "path": "../outside.txt"},
        RETRACE_ERROR_CODE,
        "outside the workspace",
    ),
    ("retrace/conversation/get", {"sessionId": "no-such-session"}, RETRACE_ERROR_CODE, "unknown session"),
    ("retrace/timeline/get", {"sessionId": "no-such-session"}, RETRACE_ERROR_CODE, "unknown session"),
    ("retrace/conversation/summarize", {"id": "x", "direction": "sideways"}, INVALID_PARAMS, "direction"),
    ("retrace/no/such/method", {}, METHOD_NOT_FOUND, "retrace/no/such/method"),
]


async def test_bad_requests_are_clear_errors_and_the_server_stays_up(editor: EditorClient) -> None:
    # One server for the whole table: each case is followed by a request that must succeed.
    for method, params, code, fragment in BAD_REQUESTS:
        error = await editor.request_error(method, params)
        assert (error.code, fragment in error.message) == (code, True), (method, params, error.message)
        assert "\n" not in error.message
        timeline = await editor.request("retrace/timeline/get", {})
        assert timeline["head"] is not None


async def test_malformed_notifications_are_ignored_and_logged(editor: EditorClient) -> None:
    editor.notify("retrace/editor/didChangeState", {"openEditors": "not a list"})
    editor.notify("retrace/no/such/notification", {})
    stats = await editor.request("retrace/stats")
    assert stats["store"]["checkpoints"] >= 1
    assert any("retrace/editor/didChangeState" in m.message for m in editor.client.log_messages)


async def test_requests_before_the_store_is_ready_wait_instead_of_failing(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    # Bare ``python -m retrace`` (no ``serve``) is the server too.
    client = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO, server_args=())
    try:
        # Sent right after initialize, while the baseline may still be building.
        timeline = await client.request("retrace/timeline/get", {})
        assert timeline["checkpoints"][0]["kind"] == "baseline"
    finally:
        await stop_editor(client)


async def test_second_server_on_the_same_store_reports_the_lock(
    editor: EditorClient, workspace: Path, store: Path, session_model: FakeModel
) -> None:
    second = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        error = await second.request_error("retrace/timeline/get", {})
        assert error.code == -32002
        assert "locked" in error.message
    finally:
        await stop_editor(second)
    # The first server is unaffected.
    assert (await editor.request("retrace/timeline/get", {}))["head"] is not None


async def test_invalid_settings_fall_back_to_defaults(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    client = await start_editor(
        workspace,
        store,
        env=model_env(session_model),
        settings={"maxTokens": -5, "permissions": {"write": "auto"}},
    )
    try:
        timeline = await client.request("retrace/timeline/get", {})
        assert timeline["head"] is not None
        assert any("maxTokens" in m.message for m in client.client.log_messages)
        update = await client.request("retrace/settings/update", {"settings": {"excludes": ["*.log"]}})
        assert update["applied"] is True and update["restartRequired"] == []  # applied at once
    finally:
        await stop_editor(client)


async def test_clean_shutdown_releases_the_store(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    first = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    head = (await first.request("retrace/timeline/get", {}))["head"]
    await stop_editor(first)
    assert first.client._server is not None and first.client._server.returncode == 0
    second = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    try:
        assert (await second.request("retrace/timeline/get", {}))["head"] == head
    finally:
        await stop_editor(second)


async def test_without_a_workspace_folder_methods_say_why(workspace: Path, store: Path) -> None:
    client = await start_editor(workspace, store, open_folder=False)
    try:
        error = await client.request_error("retrace/timeline/get", {})
        assert error.code == -32002 and "no workspace folder" in error.message
    finally:
        await stop_editor(client)
