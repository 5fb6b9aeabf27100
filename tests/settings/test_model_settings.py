"""`retrace.model`: the section's forms, THE check of it, and what reaches the agent."""

from __future__ import annotations

import pytest

from retrace.agent.model.settings import DEFAULT_MODEL, ModelSettings
from retrace.lsp.startup import agent_settings
from retrace.protocol.models import ServerSettings


@pytest.mark.parametrize(
    ("raw", "provider", "model_id"),
    [
        ("claude-opus-4-1", "anthropic", "claude-opus-4-1"),  # the setting before providers existed
        ({}, "anthropic", DEFAULT_MODEL),
        ({"provider": "vscode-lm"}, "vscode-lm", ""),  # the editor picks
        (
            {"provider": "bedrock", "id": " us.anthropic.claude-x-v1:0 "},
            "bedrock",
            "us.anthropic.claude-x-v1:0",
        ),
    ],
)
def test_the_section_and_its_old_string_form(raw: object, provider: str, model_id: str) -> None:
    model = ServerSettings.model_validate({"model": raw}).model
    assert (model.provider, model.model_id()) == (provider, model_id)


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"provider": "bedrock"}, "retrace.model.id"),
        ({"provider": "vertex"}, "retrace.model.id"),
        ({"provider": "openai-compatible", "id": "m"}, "retrace.model.openaiCompatible.baseUrl"),
        (
            {"provider": "openai-compatible", "openaiCompatible": {"baseUrl": "http://h/v1"}},
            "retrace.model.id",
        ),
        ({"provider": "anthropic"}, None),
        ({"provider": "vscode-lm"}, None),
    ],
)
def test_each_problem_names_its_setting(raw: dict[str, object], names: str | None) -> None:
    problem = ModelSettings.model_validate(raw).problem()
    assert (problem is None) if names is None else (problem is not None and names in problem)


def test_the_agent_gets_the_provider_and_its_context_window() -> None:
    server = ServerSettings.model_validate(
        {"model": {"provider": "openai-compatible", "id": "qwen", "contextWindow": 8192}}
    )
    agent = agent_settings(server, None, trusted=True)
    assert (agent.access.provider, agent.model, agent.window()) == ("openai-compatible", "qwen", 8192)
    # The offline model answers as the Anthropic API, whatever provider is configured.
    demo = agent_settings(server, "http://127.0.0.1:9", trusted=True)
    assert (demo.access.provider, demo.model, demo.window()) == ("anthropic", DEFAULT_MODEL, 200_000)


def test_a_context_window_below_a_thousand_tokens_is_refused() -> None:
    with pytest.raises(ValueError, match=r"context_?[wW]indow"):
        ModelSettings.model_validate({"contextWindow": 10})
