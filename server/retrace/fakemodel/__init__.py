"""A local fake of the Anthropic Messages API for tests and the offline demo.

``FakeModel(load_scenario("demo")).start()`` serves scripted replies over real HTTP + SSE so the
real anthropic SDK code path runs; :func:`start_for_env` is the server's hook for the offline demo.
"""

from __future__ import annotations

import os
import threading

from retrace import credentials
from retrace.fakemodel.scenario import (
    Match,
    Scenario,
    ScenarioError,
    ScriptedResponse,
    ScriptedToolCall,
    builtin_scenarios,
    load_scenario,
)
from retrace.fakemodel.server import FINISHED_TEXT, FakeModel

__all__ = [
    "FINISHED_TEXT",
    "FakeModel",
    "Match",
    "Scenario",
    "ScenarioError",
    "ScriptedResponse",
    "ScriptedToolCall",
    "builtin_scenarios",
    "load_scenario",
    "start_for_env",
    "stop_for_env",
]

_env_lock = threading.Lock()
_env_model: FakeModel | None = None


def start_for_env() -> str | None:
    """Start the in-process fake model when the environment asks for it; its base URL, else ``None``.

    It is started when ``RETRACE_FAKE_MODEL`` names a scenario (name or file), or when neither
    ``ANTHROPIC_API_KEY`` nor ``ANTHROPIC_BASE_URL`` is set (the offline demo, scenario ``demo``).
    Idempotent: later calls return the same server's URL.
    """
    global _env_model
    scenario = os.environ.get("RETRACE_FAKE_MODEL")
    if not scenario:
        if credentials.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_BASE_URL"):
            return None
        scenario = "demo"
    with _env_lock:
        if _env_model is None:
            _env_model = FakeModel(load_scenario(scenario))
            _env_model.start()
        return _env_model.base_url


def stop_for_env() -> None:
    """Stop the fake model :func:`start_for_env` started (server shutdown, tests). Idempotent."""
    global _env_model
    with _env_lock:
        if _env_model is not None:
            _env_model.stop()
            _env_model = None
