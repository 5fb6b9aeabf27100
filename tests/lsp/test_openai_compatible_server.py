"""Over the real server (``python -m retrace serve``): ``retrace.model.provider =
"openai-compatible"``. Settings that cannot make a request refuse the turn at once, naming the
setting; a configured endpoint answers a turn through the real ``openai`` SDK and the fake's chat
completions (which validate every request like the real API); a restore of code and conversation
leaves a history whose next request is valid. (The key's hand-off, and that no tool command sees
it, is tested on a real process in tests/agent/test_openai_client.py: a key in the environment
makes the server start cold, seconds more here.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, start_editor, stop_editor

from retrace.lsp.rpc import RETRACE_ERROR_CODE
from retrace.offline import FakeModel, Scenario

pytestmark = pytest.mark.e2e

NO_MODEL_ENV = {
    "ANTHROPIC_API_KEY": "",
    "ANTHROPIC_BASE_URL": "",
    "ANTHROPIC_AUTH_TOKEN": "",
    "OPENAI_API_KEY": "",
    "RETRACE_FAKE_MODEL": "",
}


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (
            {"provider": "openai-compatible", "id": "qwen2.5-coder:14b"},
            "retrace.model.openaiCompatible.baseUrl",
        ),
        (
            {"provider": "openai-compatible", "openaiCompatible": {"baseUrl": "http://127.0.0.1:9/v1"}},
            "retrace.model.id",
        ),
    ],
    ids=["no-base-url", "no-model-id"],
)
async def test_settings_that_cannot_make_a_request_refuse_the_turn(
    workspace: Path, store: Path, model: dict[str, Any], named: str
) -> None:
    editor = await start_editor(workspace, store, env=NO_MODEL_ENV, settings={**AUTO, "model": model})
    try:
        assert (await editor.request("retrace/server/state"))["modelMode"] == "live"
        error = await editor.request_error("retrace/agent/prompt", {"text": "hello"})
        assert error.code == RETRACE_ERROR_CODE
        assert isinstance(error.data, dict) and error.data["code"] == "modelNotConfigured"
        assert named in error.message
        assert editor.events == []  # no turn started
    finally:
        await stop_editor(editor)


def responses() -> list[dict[str, Any]]:
    probe = "env | grep -ci 'openai_api_key' || true; echo made > by-command.txt; echo probe-done"
    return [
        {
            "match": {"lastUserTextContains": "probe"},
            "text": "Writing a file and looking at the environment.",
            "toolCalls": [
                {"name": "write_file", "input": {"path": "made.txt", "content": "one\n"}},
                {"name": "run_command", "input": {"command": probe}},
            ],
        },
        {"match": {"lastToolResultContains": "probe-done"}, "text": "Done."},
        {"match": {"lastUserTextContains": "after restore"}, "text": "Continuing."},
    ]


async def test_a_turn_restore_and_next_turn_through_an_openai_compatible_endpoint(
    workspace: Path, store: Path
) -> None:
    fake = FakeModel(Scenario.model_validate({"responses": responses()}))
    fake.start()
    model = {
        "provider": "openai-compatible",
        "id": "qwen-test",
        "openaiCompatible": {"baseUrl": f"{fake.base_url}/v1"},
    }
    editor = await start_editor(workspace, store, env=NO_MODEL_ENV, settings={**AUTO, "model": model})
    try:
        first = await editor.run_turn("probe the environment")
        finished = editor.events_of("toolCallFinished", first["turnId"])
        assert [e["status"] for e in finished] == ["ok", "ok"], finished
        assert finished[1]["output"].splitlines()[0] == "0", "the key's variable is hidden from tool commands"
        assert (workspace / "made.txt").read_text() == "one\n"
        usage = editor.events_of("usage", first["turnId"])
        assert usage and usage[-1].get("costUnknown") is True

        created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", first["turnId"])]
        tools = [c for c in created if c["kind"] == "tool"]
        assert [c["tool"] for c in tools] == ["write_file", "run_command"]
        restored = await editor.request("retrace/checkpoint/restore", {"id": tools[0]["id"], "mode": "both"})
        assert restored["outcome"]["kind"] == "applied", restored
        assert not (workspace / "by-command.txt").exists() and (workspace / "made.txt").exists()

        await editor.run_turn("after restore", first["sessionId"])
        assert "Continuing." in "".join(e["text"] for e in editor.events_of("textDelta"))
    finally:
        await stop_editor(editor)
        fake.stop()
    assert fake.statuses == [200, 200, 200], fake.requests
    assert set(fake.wires) == {"chat"}
    assert {h["authorization"] for h in fake.headers} == {"Bearer retrace-offline"}  # no key: a local one
    last = fake.requests[-1]["messages"]
    # Cut after the first call of the batch: its result, the later call "not run", then the prompt.
    assert [m["role"] for m in last[-3:]] == ["tool", "tool", "user"]
    assert last[-1]["content"].endswith("after restore")
