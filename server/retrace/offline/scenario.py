"""Scenario files: the script a fake Messages API follows.

A scenario is an ordered list of responses. Each request is answered by the first response at or
after the cursor whose ``match`` holds for the request (responses skipped over are dropped), so a
scenario can branch on what the agent sent. When none is left the fake answers a plain
"(scenario finished)" ``end_turn`` reply. Fault fields make a response fail the way the real API
fails: an HTTP error ``status`` served ``times`` times before the response succeeds (with the
``retryAfter`` / ``retryAfterMs`` headers it asks for), or a broken
stream (``truncateStream``, ``malformedEvent``, ``invalidToolJson``) served once instead of it.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from retrace.camel import CamelModel
from retrace.engine.errors import RetraceError

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn"]


class Match(CamelModel):
    """Conditions on the request; all given ones must hold."""

    last_user_text_contains: str | None = None
    """Substring of the text of the latest user message that has text (the prompt, or a note)."""
    last_tool_result_contains: str | None = None
    """Substring of some tool result in the last message."""
    tool_result_is_error: bool | None = None
    """``true``: some tool result in the last message is an error; ``false``: there are tool
    results and none is an error."""


class ScriptedToolCall(CamelModel):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ScriptedUsage(CamelModel):
    input_tokens: int | None = None
    """``None``: estimated from the request size."""
    output_tokens: int | None = None
    """``None``: estimated from the response size."""


class ScriptedResponse(CamelModel):
    comment: str | None = Field(default=None, alias="_comment")
    match: Match | None = None
    text: str = ""
    """Streamed in small chunks."""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    """Default: ``tool_use`` when there are tool calls, else ``end_turn``."""
    usage: ScriptedUsage = Field(default_factory=ScriptedUsage)
    status: Literal[429, 500, 503, 529] | None = None
    """Answer this HTTP error status ``times`` times before the response succeeds."""
    retry_after: str | None = None
    """The ``retry-after`` header of those errors, verbatim (seconds, or an HTTP date)."""
    retry_after_ms: str | None = None
    """The ``retry-after-ms`` header of those errors, verbatim. Neither given: a 429 or 529
    carries ``retry-after-ms: 10``."""
    times: int = Field(default=1, ge=1)
    error_message: str | None = None
    truncate_stream: bool = False
    """Stream part of the response, then drop the connection (no ``message_stop``)."""
    malformed_event: bool = False
    """Send an event whose data is not JSON in the middle of the stream."""
    invalid_tool_json: bool = False
    """The first tool call's ``input_json_delta`` chunks do not form JSON."""
    refusal: bool = False
    """Stop with ``stop_reason: refusal`` after the text."""
    chunk_delay_ms: float = 0.0
    """Pause between streamed events (lets a test cancel mid-stream)."""
    lane: str | None = None
    """Answer only conversations whose FIRST user message contains this text (a subagent's
    brief names its task); each lane keeps its own place in the script, so subagents running
    in parallel each get their own responses in order, however their requests interleave.
    Responses without a lane answer every other conversation."""

    def effective_stop_reason(self) -> StopReason:
        if self.refusal:
            return "refusal"
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


class Scenario(CamelModel):
    comment: str | None = Field(default=None, alias="_comment")
    name: str = "scenario"
    responses: list[ScriptedResponse] = Field(default_factory=list)


class ScenarioError(RetraceError):
    code = "scenarioError"


def builtin_scenarios() -> list[str]:
    root = resources.files("retrace.offline") / "scenarios"
    return sorted(p.name.removesuffix(".json") for p in root.iterdir() if p.name.endswith(".json"))


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A built-in scenario by name (``demo``, ``e2e``) or a scenario file by path."""
    text: str
    candidate = Path(name_or_path)
    if candidate.suffix == ".json" or candidate.exists():
        try:
            text = candidate.read_text(encoding="utf-8")
        except OSError as e:
            raise ScenarioError(f"cannot read scenario file {candidate}: {e.strerror}") from e
    else:
        res = resources.files("retrace.offline") / "scenarios" / f"{name_or_path}.json"
        if not res.is_file():
            known = ", ".join(builtin_scenarios())
            raise ScenarioError(f"unknown scenario {str(name_or_path)!r} (built-in: {known})")
        text = res.read_text(encoding="utf-8")
    try:
        return Scenario.model_validate(json.loads(text))
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ScenarioError(f"invalid scenario {name_or_path}: {where}: {err['msg']}") from e
    except ValueError as e:
        raise ScenarioError(f"invalid scenario {name_or_path}: not JSON ({e})") from e
