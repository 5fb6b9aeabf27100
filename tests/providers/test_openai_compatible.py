"""The provider scenario through an OpenAI-compatible endpoint (``retrace.model.provider =
"openai-compatible"``): the real composition (``ModelEndpoint().client_factory()``), the real
``openai`` SDK, the fake's chat completions (tests/providers/agent_scenario.py). What is
recorded and restored must equal the Anthropic API's run; only the wire differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrace.bootstrap import ModelEndpoint
from retrace.offline.openai_validation import validate_chat

from .agent_scenario import (
    SECOND_PROMPT,
    assert_same_as_anthropic,
    run_agent_scenario,
    scenario_fake,
    scenario_settings,
)

MODEL = "qwen2.5-coder:14b"


async def test_an_openai_compatible_endpoint_passes_the_provider_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local endpoint: no key
    fake = scenario_fake()
    try:
        access = {
            "provider": "openai-compatible",
            "id": MODEL,
            "openaiCompatible": {"baseUrl": f"{fake.base_url}/v1"},
        }
        settings = scenario_settings(model=MODEL, access=access)
        outcome = await run_agent_scenario(
            tmp_path / "openai", fake, settings, ModelEndpoint().client_factory()
        )
    finally:
        fake.stop()
    await assert_same_as_anthropic(outcome, tmp_path)

    assert set(fake.wires) == {"chat"} and set(fake.statuses) == {200}
    assert {h["authorization"] for h in fake.headers} == {"Bearer retrace-offline"}
    # The request after restoring both to the first call, in the chat form the fake validated:
    # the first call's result, the second call answered as not run, then the new prompt.
    request = outcome.last_request
    validate_chat(request)
    assert request["model"] == MODEL
    messages = request["messages"]
    (batch,) = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert [c["function"]["name"] for c in batch["tool_calls"]] == ["write_file", "edit_file"]
    answers = messages[messages.index(batch) + 1 : messages.index(batch) + 3]
    assert [a["tool_call_id"] for a in answers] == [c["id"] for c in batch["tool_calls"]]
    assert "not run" in answers[1]["content"] and answers[1]["content"].startswith("Error: ")
    assert messages[-1] == {"role": "user", "content": SECOND_PROMPT}
