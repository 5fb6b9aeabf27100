"""Prompt caching and retry-after through the real server process (``retrace serve``), the
fake Messages API in the test process (real HTTP + SSE): it rejects invalid breakpoints with a
400, accounts cache writes and reads, and records when each request arrived."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor

from retrace.offline import FakeModel, Scenario
from retrace.offline.prompt_cache import prefix_blocks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_requests_carry_breakpoints_and_read_the_cache_across_a_restore(
    editor: EditorClient, session_model: FakeModel
) -> None:
    first = await editor.run_turn("first task")
    session_id = first["sessionId"]
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", first["turnId"])]
    assert set(session_model.statuses) == {200}
    for body in session_model.requests:
        assert "cache_control" in body["system"][-1]
        assert "cache_control" in body["messages"][-1]["content"][-1]
    usages = session_model.usages
    assert all(u["cache_read_input_tokens"] > 0 for u in usages[1:])
    notified = editor.events_of("usage", first["turnId"])
    assert [e["cacheReadInputTokens"] for e in notified] == [u["cache_read_input_tokens"] for u in usages]
    assert [e["cacheCreationInputTokens"] for e in notified] == [
        u["cache_creation_input_tokens"] for u in usages
    ]

    # Restore the conversation to the edit_file checkpoint, then a new turn: it reads the cached
    # history up to there, not only the tools + system prefix.
    await editor.request("retrace/checkpoint/restore", {"id": created[1]["id"], "mode": "conversation"})
    await editor.run_turn("second task", session_id=session_id)
    body, usage = session_model.requests[-1], session_model.usages[-1]
    assert session_model.statuses[-1] == 200
    stable = prefix_blocks(body)[len(body["tools"]) + len(body["system"]) - 1].tokens
    assert usage["cache_read_input_tokens"] > stable
    conversation = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    assert conversation["usage"]["cacheReadInputTokens"] == sum(u["cache_read_input_tokens"] for u in usages)


async def test_a_rate_limit_retry_waits_as_long_as_the_api_asks(workspace: Path, store: Path) -> None:
    scenario = Scenario.model_validate(
        {"responses": [{"status": 429, "times": 1, "retryAfter": "2", "text": "after the wait"}]}
    )
    with FakeModel(scenario) as model:
        client = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
        try:
            result = await client.run_turn("hi")
        finally:
            await stop_editor(client)
    assert model.statuses == [429, 200]
    # the server's own first backoff is 1 s: only the header explains a 2 s wait
    assert model.times[1] - model.times[0] >= 2.0
    [retrying] = [e for e in client.events_of("error", result["turnId"])]
    assert retrying["retrying"] is True
    assert "retrying in 2s" in retrying["message"]
