"""The relay method ``hook``: another agent's hook event, handed over by ``retrace hook <agent>``
while this server holds the store (:mod:`retrace.cli.hook`).

The params are ``{"agent": <adapter name>, "event": <the hook's JSON object, as the agent sent
it>}``; the adapter parses the event (a bad one is refused with its one-line reason, which the
command line logs), the :class:`~retrace.app.hooks.service.HookService` of this server's engine
applies it in the engine gate (serialised with the agent's own checkpoints), and the editor is
told each step as for Retrace's own sessions: ``turnStarted``, ``checkpointCreated`` (with its
``retrace/timeline/didChange``), ``turnFinished`` — the turn events naming the ``agent``, so the
editor shows them in the timeline and never as Retrace's own chat or activity. The answer
carries the session, the checkpoints made and the notes the command line writes to the hook
log. :func:`apply_hook`, :func:`agent_events` and :func:`answer` know nothing of the language
server: any process holding the store can serve the method with its own gate and its own way of
telling the editor.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from retrace.agent.notifications import CheckpointCreated, EventBase, TurnFinished, TurnStarted
from retrace.app.hooks.registry import adapter_for
from retrace.app.hooks.service import INTERRUPTED, HookOutcome, HookService, Recorded, TurnBegan
from retrace.camel import CamelModel
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import AGENT_NAME

if TYPE_CHECKING:
    from retrace.lsp.services.relay_context import RelayContext

log = logging.getLogger(__name__)

_SERVICES: weakref.WeakKeyDictionary[Engine, HookService] = weakref.WeakKeyDictionary()
"""One service per engine: it remembers each session's running turn between calls."""

StopReason = Literal["end_turn", "cancelled", "error"]


class HookParams(CamelModel):
    """``hook``: one hook event of an external agent."""

    agent: str = Field(pattern=AGENT_NAME)
    event: dict[str, Any]


def service_of(engine: Engine) -> HookService:
    service = _SERVICES.get(engine)
    if service is None:
        service = _SERVICES[engine] = HookService()
    return service


async def hook(ctx: RelayContext, params: HookParams) -> dict[str, Any]:
    """The relay method: apply in the gate, tell the editor each step (if there is one), answer."""
    outcome = await apply_hook(ctx.run, params)
    for told in agent_events(outcome):
        await ctx.tell(told)
    return answer(outcome)


async def apply_hook(
    run: Callable[[Callable[[Engine], HookOutcome]], Awaitable[HookOutcome]], params: HookParams
) -> HookOutcome:
    """Parse ``params.event`` with its agent's adapter and apply it through ``run`` (the engine
    gate of whichever process holds the store). A refusal is a :class:`RetraceError` with its one
    line (logged here too); anything else is a bug, refused as a failure all the same (the
    command line must not retry it)."""
    name = params.event.get("hook_event_name")
    try:
        event = adapter_for(params.agent).parse(params.event)
        outcome = await run(lambda engine: service_of(engine).apply(engine, event))
    except RetraceError as exc:
        log.warning("hook %s %s not recorded: %s", params.agent, name, exc)
        raise
    except Exception as exc:
        log.exception("hook %s %s failed", params.agent, name)
        raise RetraceError(f"internal error: {type(exc).__name__}: {exc}") from exc
    for note in outcome.notes:
        log.info("%s", note)
    return outcome


def answer(outcome: HookOutcome) -> dict[str, Any]:
    """The relay answer: the session, the checkpoints made, the notes for the hook log."""
    return {
        "sessionId": outcome.session_id,
        "checkpoints": [cp.id for cp in outcome.checkpoints],
        "notes": outcome.notes,
    }


def agent_events(outcome: HookOutcome) -> list[CheckpointCreated | EventBase]:
    """What the editor is told, step by step (pure)."""
    sid = outcome.session_id or ""
    agent = outcome.agent
    told: list[CheckpointCreated | EventBase] = []
    for step in outcome.steps:
        if isinstance(step, Recorded):
            told.append(CheckpointCreated(session_id=sid, turn_id=step.turn_id, checkpoint=step.checkpoint))
        elif isinstance(step, TurnBegan):
            told.append(TurnStarted(session_id=sid, turn_id=step.turn_id, text=step.text, agent=agent))
        else:
            told.append(
                TurnFinished(
                    session_id=sid, turn_id=step.turn_id, stop_reason=_stop_reason(step.reason), agent=agent
                )
            )
    return told


def _stop_reason(reason: str) -> StopReason:
    if reason == INTERRUPTED:
        return "cancelled"
    return "error" if reason == "error" else "end_turn"
