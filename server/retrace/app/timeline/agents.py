"""Sessions another agent recorded through its hooks (Claude Code, Gemini CLI): how they are
named, what of them can be restored, and when one of their turns counts as running.

Such a session's journal starts with an ``agentSession`` event; its turns are the agent's
prompts (``turn``) and end with ``turnEnd`` (the agent's ``Stop`` / ``AfterAgent`` hook).

The turn-state rule (:func:`turn_state`, pure, table-tested):

* a turn with a ``turnEnd`` is ``ended``;
* a turn without one that is not the session's latest turn is ``interrupted`` (its agent was
  stopped by its user — Claude Code sends no ``Stop`` then — or died, and a later prompt came);
* the session's latest turn without one is ``running`` while the session showed life (any
  journal event or checkpoint) within :data:`IDLE_LIMIT`, else ``interrupted``: an agent that
  died mid-turn never stays "running" forever. A single tool call running silently longer than
  the limit is reported as interrupted too, until its checkpoint arrives (then running again).

:func:`running_turns` reads a store (through the engine: the first event of each journal, then
the whole journal of the external ones, checkpoints skipped) for the restore service; the
timeline gets the same facts from its cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from retrace.engine import Engine
from retrace.engine.store.events import (
    AgentSessionEvent,
    CheckpointEvent,
    JournalEvent,
    TurnEndEvent,
    TurnEvent,
)
from retrace.protocol.timeline import RunningAgentTurn, TurnState

IDLE_LIMIT = timedelta(minutes=30)
"""How long an external agent's open turn counts as running without any sign of life."""

AGENT_TITLES: Mapping[str, str] = {"claude-code": "Claude Code", "gemini-cli": "Gemini CLI"}
"""Display names of the agents Retrace has hook adapters for."""


def agent_title(agent: str) -> str:
    """The display name of an agent (``claude-code`` → "Claude Code"); an agent without an entry
    in :data:`AGENT_TITLES` is shown by its words ("my-agent" → "My Agent")."""
    known = AGENT_TITLES.get(agent)
    if known is not None:
        return known
    return " ".join(part.capitalize() for part in agent.split("-") if part) or agent


def conversation_reason(agent: str) -> str:
    """Why a checkpoint of ``agent``'s session offers no conversation restore."""
    return f"{agent_title(agent)} keeps its own conversation; Retrace restores only the code"


def turn_state(*, ended: bool, latest: bool, last_activity: datetime | None, now: datetime) -> TurnState:
    """The state of one external turn (see the module's rule)."""
    if ended:
        return "ended"
    if not latest or last_activity is None:
        return "interrupted"
    return "running" if now - last_activity <= IDLE_LIMIT else "interrupted"


def latest_activity(*moments: datetime | None) -> datetime | None:
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def from_ts(ts: object) -> datetime | None:
    """A journal event's ``ts`` (seconds since the epoch) as a time; ``None`` when not a number."""
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        return None
    try:
        return datetime.fromtimestamp(ts, UTC)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class ExternalSession:
    """What the journal of an external session says, as far as turns go."""

    agent: str
    turns: list[tuple[str, str, datetime | None]]
    """(turn id, prompt, began at) in journal order."""
    ended: frozenset[str]
    last_event_at: datetime | None


def external_session(events: Iterable[JournalEvent]) -> ExternalSession | None:
    """Fold a session journal's events (checkpoints may be left out); ``None`` when its first
    event is not ``agentSession`` (a session of Retrace's own)."""
    agent: str | None = None
    turns: list[tuple[str, str, datetime | None]] = []
    seen: set[str] = set()
    ended: set[str] = set()
    last: datetime | None = None
    for number, event in enumerate(events):
        if number == 0:
            if not isinstance(event, AgentSessionEvent):
                return None
            agent = event.agent
        last = latest_activity(last, from_ts(event.ts))
        if isinstance(event, TurnEvent) and event.turn_id not in seen:
            seen.add(event.turn_id)
            turns.append((event.turn_id, event.text, from_ts(event.ts)))
        elif isinstance(event, TurnEndEvent):
            ended.add(event.turn_id)
    if agent is None:
        return None
    return ExternalSession(agent, turns, frozenset(ended), last)


def first_agent(engine: Engine, session_id: str) -> str | bool | None:
    """The agent a session's journal names in its first event; ``None``: a session of Retrace's
    own; ``False``: nothing written yet (ask again later)."""
    for event in engine.events(session_id):
        return event.agent if isinstance(event, AgentSessionEvent) else None
    return False


def is_external(engine: Engine, session_id: str) -> str | None:
    """The agent whose hooks recorded ``session_id`` (its journal's first event), else ``None``."""
    agent = first_agent(engine, session_id)
    return agent if isinstance(agent, str) else None


def running_turns(engine: Engine, now: datetime | None = None) -> list[RunningAgentTurn]:
    """Every external agent's turn running now in the store (oldest first). Run it where the
    engine may be used (the gate)."""
    moment = now or datetime.now(UTC)
    out: list[RunningAgentTurn] = []
    for sid in engine.sessions():
        if is_external(engine, sid) is None:
            continue
        session = external_session(engine.events(sid, skip=(CheckpointEvent,)))
        if session is None or not session.turns:
            continue
        turn_id, prompt, since = session.turns[-1]
        checkpoints = engine.timeline(sid)
        last = latest_activity(session.last_event_at, checkpoints[-1].created_at if checkpoints else None)
        state = turn_state(ended=turn_id in session.ended, latest=True, last_activity=last, now=moment)
        if state == "running":
            line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
            out.append(
                RunningAgentTurn(
                    agent=session.agent,
                    agent_title=agent_title(session.agent),
                    session_id=sid,
                    turn_id=turn_id,
                    prompt=line[:200],
                    since=since,
                    last_activity_at=last,
                )
            )
    out.sort(key=lambda t: t.since.timestamp() if t.since is not None else 0.0)
    return out
