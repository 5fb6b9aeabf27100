"""The one agent scenario every model provider must pass, through its real client against the
local fake (issue 30: "checkpoints and restores are identical whatever the provider").

prompt → a reply with text and two tool calls in one batch → a checkpoint after each → the
final reply → restore BOTH (code on disk and conversation) to the first call's checkpoint →
a second prompt, whose request (in the provider's own wire form) the fake validates like the
real service. :func:`run_agent_scenario` returns a provider-neutral :class:`ScenarioOutcome`;
:func:`assert_same_as_anthropic` compares it with the Anthropic API's run, so a provider can
differ only in its wire, never in what is recorded or restored.

A provider test supplies the settings (``access`` names the provider) and the client factory
that reaches its wire on the fake (``ModelEndpoint(...).client_factory(...)`` for the real
composition). The fake must answer that wire from :data:`SCRIPT`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.agent.conftest import RecordingHost, make_workspace

from retrace.agent.permissions import PermissionSettings
from retrace.agent.runtime import ClientFactory
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.app.restore import RestoreRequest, restore_code_on_disk
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.offline import FakeModel, Scenario

PLAN = "Plan\n\n1. add a subtract helper\n"
UTIL_BEFORE = "def add(a, b):\n    return a + b\n"
UTIL_AFTER = UTIL_BEFORE + "\n\ndef sub(a, b):\n    return a - b\n"
FIRST_PROMPT = "write the plan, then add sub() to util.py"
SECOND_PROMPT = "what changed since the plan?"

SCRIPT: list[dict[str, Any]] = [
    {
        "text": "I will write the plan and then the helper.",
        "toolCalls": [
            {"name": "write_file", "input": {"path": "notes/plan.md", "content": PLAN}},
            {
                "name": "edit_file",
                "input": {"path": "src/util.py", "old_string": UTIL_BEFORE, "new_string": UTIL_AFTER},
            },
        ],
    },
    {"text": "Done: the plan and sub() are in place."},
    {"match": {"lastUserTextContains": "since the plan"}, "text": "Only the plan exists now."},
]


def scenario_fake() -> FakeModel:
    """A fake serving :data:`SCRIPT` (started; the caller stops it)."""
    fake = FakeModel(Scenario.model_validate({"responses": SCRIPT}))
    fake.start()
    return fake


def scenario_settings(**changes: Any) -> AgentSettings:
    base = AgentSettings(
        model="claude-test-model",
        permissions=PermissionSettings(write="auto", command="auto"),
        retry_base_delay_s=0.01,
        max_retries=2,
        command_timeout_s=20,
    )
    return AgentSettings.model_validate({**base.model_dump(), **changes})


@dataclass(frozen=True)
class ScenarioOutcome:
    """What a run recorded and restored, with nothing provider-specific in it."""

    stop_reasons: list[str]
    checkpoints: list[tuple[str, str | None, tuple[str, ...]]]
    """(kind, tool, changed paths) of each checkpoint of the session, in order."""
    files_after_restore: dict[str, str | None]
    message_kinds_after_restore: list[str]
    message_kinds_at_end: list[str]
    streamed_text: str
    final_text: str
    tool_statuses: list[str]
    last_status: int
    """The HTTP status of the fake's answer to the request after the restore (200: valid)."""
    last_request: dict[str, Any]
    """That request's body as the fake received it (the provider's own wire form)."""


def _text_of(view_messages: list[Any]) -> str:
    last = view_messages[-1]
    return "".join(b.get("text", "") for b in last.content if isinstance(b, dict) and b.get("type") == "text")


async def run_agent_scenario(
    tmp_path: Path, fake: FakeModel, settings: AgentSettings, client_factory: ClientFactory
) -> ScenarioOutcome:
    """Run the scenario with ``client_factory``'s client for ``settings`` against ``fake``."""
    ws = make_workspace(tmp_path)
    engine = await asyncio.to_thread(Engine.open, ws, tmp_path / "store", config=EngineConfig(watcher=False))
    host = RecordingHost()
    service = AgentService(engine, host, settings, client_factory)
    try:
        await service.load()
        sid, _ = await service.prompt(FIRST_PROMPT, None)
        await asyncio.wait_for(service.wait_idle(sid), 60)
        tools = [c for c in engine.timeline(sid) if c.kind == "tool"]
        assert [c.tool for c in tools] == ["write_file", "edit_file"], host.events
        first = tools[0]

        outcome = await asyncio.to_thread(restore_code_on_disk, engine, RestoreRequest(first.id, mode="both"))
        assert outcome.kind == "applied", outcome
        restored = await service.restore_conversation(sid, first.id)
        files = {
            rel: (ws / rel).read_text() if (ws / rel).exists() else None
            for rel in ("notes/plan.md", "src/util.py")
        }
        before = len(fake.requests)
        await service.prompt(SECOND_PROMPT, sid)
        await asyncio.wait_for(service.wait_idle(sid), 60)
        assert len(fake.requests) > before, "the second prompt made no request"
        end = await service.conversation(sid)
        return ScenarioOutcome(
            stop_reasons=[e.stop_reason for e in host.of("turnFinished")],
            checkpoints=[
                (c.kind, c.tool, tuple(sorted(f.path for f in c.files))) for c in engine.timeline(sid)
            ],
            files_after_restore=files,
            message_kinds_after_restore=[m.kind for m in restored.messages],
            message_kinds_at_end=[m.kind for m in end.messages],
            streamed_text="".join(e.text for e in host.of("textDelta")),
            final_text=_text_of(end.messages),
            tool_statuses=[e.status for e in host.of("toolCallFinished")],
            last_status=fake.statuses[-1],
            last_request=fake.requests[-1],
        )
    finally:
        service.background.kill_all()
        engine.close()


def assert_scenario_held(outcome: ScenarioOutcome) -> None:
    """What every provider's run must show, whatever its wire."""
    assert outcome.stop_reasons == ["end_turn", "end_turn"], outcome
    assert outcome.tool_statuses == ["ok", "ok"], outcome
    assert outcome.files_after_restore == {"notes/plan.md": PLAN, "src/util.py": UTIL_BEFORE}
    assert "I will write the plan" in outcome.streamed_text
    assert outcome.final_text == "Only the plan exists now."
    assert outcome.last_status == 200, outcome.last_request


async def anthropic_outcome(tmp_path: Path) -> ScenarioOutcome:
    """The reference run: the Anthropic API's client against the fake."""
    from retrace.bootstrap import ModelEndpoint

    fake = scenario_fake()
    try:
        settings = scenario_settings(base_url=fake.base_url)
        return await run_agent_scenario(tmp_path, fake, settings, ModelEndpoint().client_factory())
    finally:
        fake.stop()


async def assert_same_as_anthropic(outcome: ScenarioOutcome, tmp_path: Path) -> None:
    """``outcome`` recorded and restored exactly what the Anthropic API's run did."""
    assert_scenario_held(outcome)
    reference = await anthropic_outcome(tmp_path / "anthropic")
    for name in (
        "stop_reasons",
        "checkpoints",
        "files_after_restore",
        "message_kinds_after_restore",
        "message_kinds_at_end",
        "final_text",
        "tool_statuses",
    ):
        assert getattr(outcome, name) == getattr(reference, name), name


async def retried_once(
    tmp_path: Path, status: int, settings: AgentSettings, client_factory: ClientFactory, fake: FakeModel
) -> None:
    """A prompt whose first model call fails with ``status`` once (``fake`` serves
    :func:`failing_once`) is retried after the wait asked for, reported as retrying, and ends
    normally: the Anthropic path's behaviour, through another provider's client."""
    engine = Engine.open(make_workspace(tmp_path), tmp_path / "store", config=EngineConfig(watcher=False))
    try:
        host = RecordingHost()
        service = AgentService(engine, host, settings, client_factory)
        sid, _ = await service.prompt("hello", None)
        await asyncio.wait_for(service.wait_idle(sid), 60)
    finally:
        engine.close()
    assert fake.statuses == [status, 200], fake.statuses
    errors = host.of("error")
    assert [e.retrying for e in errors] == [True] and str(status) in errors[0].message, errors
    assert [e.stop_reason for e in host.of("turnFinished")] == ["end_turn"]


def failing_once(status: int) -> FakeModel:
    """A started fake whose first answer is ``status`` (then a reply), asking for a short wait."""
    failing = {"status": status, "times": 1, "retryAfterMs": "10", "text": "after the wait"}
    fake = FakeModel(Scenario.model_validate({"responses": [failing]}))
    fake.start()
    return fake
