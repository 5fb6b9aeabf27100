"""Shared fixtures for the reliability campaigns.

The campaigns drive the REAL server (``python -m retrace serve``) through the editor stand-in of
``tests/lsp/lsp_support.py`` (reused, not copied: it applies ``workspace/applyEdit`` like VS Code
and validates every payload against the committed schema). Each campaign records its figures with
:func:`record_figures`; ``python -m tests.reliability.report`` turns them into
``tests/RELIABILITY.md``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

RESULTS = HERE / "results"
FULL = os.environ.get("RETRACE_FULL_CAMPAIGNS") == "1"
"""Full-size campaigns (``RETRACE_FULL_CAMPAIGNS=1``); otherwise the bounded CI variants run."""

full_only = pytest.mark.skipif(not FULL, reason="full campaign: set RETRACE_FULL_CAMPAIGNS=1")


def record_figures(campaign: str, variant: str, figures: dict[str, Any]) -> None:
    """Print a campaign's figures and keep them for the report (one JSON file per campaign/variant)."""
    RESULTS.mkdir(exist_ok=True)
    payload = {"campaign": campaign, "variant": variant, "at": datetime.now(UTC).isoformat(), **figures}
    text = json.dumps(payload, indent=2, sort_keys=True)
    print(f"\n[{campaign}/{variant}] {text}")
    (RESULTS / f"{campaign}-{variant}.json").write_text(text + "\n", "utf-8")


def turn_model(name: str, turns: dict[str, list[dict[str, Any]]]) -> Any:
    """A started fake model answering the prompt containing ``key`` with those tool calls, then
    (after their results) a short closing reply."""
    from retrace.offline import FakeModel
    from retrace.offline.scenario import Scenario

    responses: list[dict[str, Any]] = []
    for key, calls in turns.items():
        match = {"lastUserTextContains": key}
        responses.append({"match": match, "text": f"on it ({key})", "toolCalls": calls})
        # Only after tool results: a prompt merged with an unanswered earlier one must not match.
        responses.append({"match": {**match, "lastToolResultContains": ""}, "text": f"finished {key}"})
    model = FakeModel(Scenario.model_validate({"name": name, "responses": responses}))
    model.start()
    return model
