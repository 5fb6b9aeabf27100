"""The ``retrace.model`` section as the extension sends it reaches the server as the user meant.

The extension (``extension/src/settings.ts``, ``applyRestricted``) replaces the machine-scoped keys
below ``model`` with their user values. A user who still has the old ``"retrace.model": "<id>"``
gets the section as that string from VS Code; the extension then sends ``{id, <machine keys>}``
(or the plain string when there is nothing to apply). Both must mean "Anthropic, that model id";
an empty nested string means "unset", as package.json's defaults say.
"""

from __future__ import annotations

from typing import Any

import pytest

from retrace.agent.model.settings import DEFAULT_MODEL
from retrace.protocol.models import ServerSettings

MACHINE_DEFAULTS: dict[str, Any] = {
    "openaiCompatible": {"baseUrl": ""},
    "bedrock": {"region": ""},
    "vertex": {"projectId": "", "region": "global"},
}


@pytest.mark.parametrize(
    "wire",
    [
        "claude-x",
        {"id": "claude-x", **MACHINE_DEFAULTS},
    ],
)
def test_the_old_string_stays_the_anthropic_model_id(wire: Any) -> None:
    model = ServerSettings.model_validate({"model": wire}).model
    assert model.provider == "anthropic"
    assert model.model_id() == "claude-x"
    assert model.problem() is None


def test_the_manifest_defaults_are_a_working_anthropic_setup() -> None:
    wire = {
        "provider": "anthropic",
        "id": "",
        "bedrock": {"region": "", "profile": ""},
        "vscodeLm": {"vendor": "copilot"},
    }
    model = ServerSettings.model_validate({"model": {**wire, **MACHINE_DEFAULTS}}).model
    assert model.model_id() == DEFAULT_MODEL
    assert model.problem() is None


@pytest.mark.parametrize(
    ("wire", "names"),
    [
        (
            {"provider": "openai-compatible", "id": "qwen", **MACHINE_DEFAULTS},
            "retrace.model.openaiCompatible.baseUrl",
        ),
        ({"provider": "bedrock", "id": "", **MACHINE_DEFAULTS}, "retrace.model.id"),
        ({"provider": "vertex", "id": "", **MACHINE_DEFAULTS}, "retrace.model.id"),
    ],
)
def test_what_the_first_run_choice_leaves_unset_is_named(wire: dict[str, Any], names: str) -> None:
    problem = ServerSettings.model_validate({"model": wire}).model.problem()
    assert problem is not None and problem.startswith(names), problem


def test_a_local_model_as_the_choice_writes_it() -> None:
    wire = {**MACHINE_DEFAULTS, "provider": "openai-compatible", "id": "qwen2.5-coder:14b"}
    wire["openaiCompatible"] = {"baseUrl": "http://localhost:11434/v1"}
    model = ServerSettings.model_validate({"model": wire}).model
    assert model.problem() is None
    assert model.openai_compatible.base_url == "http://localhost:11434/v1"
