"""A local fake of the Anthropic Messages API for tests and the offline demo.

``FakeModel(load_scenario("demo")).start()`` serves scripted replies over real HTTP + SSE so the
real anthropic SDK code path runs; the same scenario answers Amazon Bedrock's and Google Vertex
AI's wire forms (:mod:`retrace.offline.cloud_wire`), so their SDK clients run for real too.
Production code reaches it only through the composition root (:mod:`retrace.bootstrap`), which
serves the ``demo`` scenario when no real endpoint is configured.
"""

from __future__ import annotations

from retrace.offline import cloud_wire  # noqa: F401 (adds the Bedrock and Vertex routes to the fake)
from retrace.offline.scenario import (
    Match,
    Scenario,
    ScenarioError,
    ScriptedResponse,
    ScriptedToolCall,
    builtin_scenarios,
    load_scenario,
)
from retrace.offline.server import FINISHED_TEXT, FakeModel

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
]
