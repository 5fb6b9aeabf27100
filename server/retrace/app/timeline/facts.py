"""What the story needs from a session journal: the turns (with prompts, even on abandoned
branches), each tool call's final status and input, and where the conversation was forked.

The journal is append-only, so a turn's prompt survives conversation restores and reloads; the
conversation's current branch (which turns are still live) comes from the agent's own fold of the
same events (:class:`~retrace.agent.conversation.Conversation`), never from a second definition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retrace.agent.conversation import Conversation, StoredMessage, ToolCallRecord
from retrace.app.timeline.agents import from_ts, latest_activity
from retrace.engine.store.events import (
    AgentSessionEvent,
    CheckpointEvent,
    ConversationHeadEvent,
    JournalEvent,
    ToolCallIntentEvent,
    TurnEndEvent,
    TurnEvent,
    UsageEvent,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnFact:
    turn_id: str
    prompt: str
    created_at: datetime | None
    forked_from: str | None = None
    """Checkpoint id the conversation was restored to just before this turn started."""


@dataclass(frozen=True)
class ToolFact:
    call_id: str
    tool: str
    input: Mapping[str, Any]
    status: str | None
    """Final status (``None``: no result journaled yet — running, or lost in a crash)."""


@dataclass
class SessionFacts:
    session_id: str
    turns: list[TurnFact] = field(default_factory=list)
    """In journal order."""
    tools: dict[str, ToolFact] = field(default_factory=dict)
    abandoned_turns: set[str] = field(default_factory=set)
    """Turns with messages, none of them on the conversation's current branch any more."""
    words: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Checkpoint id → (title, summary) of this session's tool rows, described earlier (when the
    inputs were known); a build uses them instead of describing those rows again."""
    inputs: bool = True
    """The tool calls carry their inputs (``False``: loaded from the persisted cache, which keeps
    only their tool and status; a row is never described from these)."""
    agent: str | None = None
    """The agent whose hooks recorded this session (its journal's first event is
    ``agentSession``); ``None``: a session of Retrace's own."""
    ended_turns: frozenset[str] = frozenset()
    """Turns a ``turnEnd`` closed (another agent's session)."""
    last_event_at: datetime | None = None
    """When the newest event folded (checkpoints aside) was written (another agent's session:
    a sign of life, see :mod:`.agents`)."""

    @property
    def is_agent_session(self) -> bool:
        """The session has a story of its own: turns, or another agent recorded it."""
        return bool(self.turns) or self.agent is not None


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


UNUSED_EVENTS = (CheckpointEvent, UsageEvent)
"""Journal event types the facts do not depend on (readers may leave them out: most of a
journal's bytes are checkpoints)."""


MessageColumns = tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]
"""What the facts keep of the conversation's messages, one list per field: ids, parents, roles,
turn ids, kinds (as read from a file: checked when a fold resumes from them)."""


@dataclass(frozen=True)
class FoldState:
    """Where a fold stopped, enough to go on from there without the events before: the
    conversation's message graph and head, each tool call's tool and status (no input), and a
    conversation restore not yet followed by a turn."""

    head: str | None
    fork: str | None
    messages: MessageColumns


def _strings(required: Iterable[object], optional: Iterable[object]) -> bool:
    return all(isinstance(v, str) for v in required) and all(
        v is None or isinstance(v, str) for v in optional
    )


class FactsFold:
    """:func:`facts_from_events`, resumable: :meth:`feed` events in order (over one or several
    calls), :meth:`facts` at any point. The conversation is folded by the agent's own
    :class:`~retrace.agent.conversation.Conversation` (one definition of what a journal means)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.conversation = Conversation(session_id)
        self.turns: list[TurnFact] = []
        self._seen: set[str] = set()
        self.fork: str | None = None
        self.no_input: set[str] = set()
        """Tool calls resumed from a :class:`FoldState`: their input is not known."""
        self.agent: str | None = None
        self.ended: set[str] = set()
        self.last_event_at: datetime | None = None
        self.fed = False
        """An event was folded already (``agentSession`` counts only as the first)."""

    @classmethod
    def resume(cls, facts: SessionFacts, state: FoldState) -> FactsFold:
        """A fold that goes on from ``state`` (``facts``: what it had produced there); raises
        ValueError when ``state`` is malformed."""
        fold = cls(facts.session_id)
        fold.turns = list(facts.turns)
        fold._seen = {t.turn_id for t in fold.turns}
        fold.fork = state.fork
        conv = fold.conversation
        for mid, parent, role, turn_id, kind in zip(*state.messages, strict=True):
            if role not in ("user", "assistant") or not _strings((mid, kind), (parent, turn_id)):
                raise ValueError(f"message {mid!r}: malformed")
            conv.messages[mid] = StoredMessage(
                mid, parent, "user" if role == "user" else "assistant", [], turn_id, kind, None
            )
        conv.head = state.head
        for call_id, tool in facts.tools.items():
            conv.tool_calls[call_id] = ToolCallRecord(call_id, tool.tool, {}, None, None, 0.0, tool.status)
        fold.no_input = set(facts.tools)
        fold.agent, fold.ended, fold.last_event_at = facts.agent, set(facts.ended_turns), facts.last_event_at
        fold.fed = True
        return fold

    def feed(self, events: Iterable[JournalEvent]) -> FactsFold:
        for number, event in enumerate(events, 1):
            if isinstance(event, ConversationHeadEvent) and event.reason in ("restore", "undo"):
                self.fork = event.checkpoint_id
            elif isinstance(event, TurnEvent):
                self._turn(event)
            elif isinstance(event, ToolCallIntentEvent):
                self.no_input.discard(event.id)
            self._external(event)
            try:
                self.conversation.apply(event)
            except (KeyError, TypeError, ValueError) as exc:  # as Conversation.from_events does
                log.warning("session %s: event %d (%s) skipped: %r", self.session_id, number, event.type, exc)
        return self

    def _external(self, event: JournalEvent) -> None:
        """What another agent's session needs: who recorded it, which turns ended, when it last
        showed life."""
        first, self.fed = not self.fed, True
        if isinstance(event, AgentSessionEvent) and first:
            self.agent = event.agent
        elif isinstance(event, TurnEndEvent):
            self.ended.add(event.turn_id)
        if self.agent is not None:
            self.last_event_at = latest_activity(self.last_event_at, from_ts(event.ts))

    def _turn(self, event: TurnEvent) -> None:
        turn_id = event.turn_id
        if turn_id in self._seen:
            return
        self._seen.add(turn_id)
        began = parse_time(event.created_at)
        if began is None and self.agent is not None:  # a hook's turn: when it was written
            began = from_ts(event.ts)
        self.turns.append(TurnFact(turn_id, event.text, began, self.fork))
        self.fork = None

    def facts(self) -> SessionFacts:
        conversation = self.conversation
        facts = SessionFacts(
            self.session_id,
            turns=list(self.turns),
            inputs=not self.no_input,
            agent=self.agent,
            ended_turns=frozenset(self.ended),
            last_event_at=self.last_event_at,
        )
        facts.tools = {
            record.id: ToolFact(record.id, record.tool, record.input, record.status)
            for record in conversation.tool_calls.values()
        }
        live = {m.turn_id for m in conversation.chain()}
        turns = (m.turn_id for m in conversation.messages.values())
        facts.abandoned_turns = {t for t in turns if t is not None and t not in live}
        return facts

    def state(self) -> FoldState:
        conv = self.conversation
        ms = conv.messages.values()
        columns: MessageColumns = (
            [m.id for m in ms],
            [m.parent for m in ms],
            [m.role for m in ms],
            [m.turn_id for m in ms],
            [m.kind for m in ms],
        )
        return FoldState(conv.head, self.fork, columns)


def facts_from_events(session_id: str, journal: Iterable[JournalEvent]) -> SessionFacts:
    """Fold one session's journal events (in order) into :class:`SessionFacts` (events of the
    :data:`UNUSED_EVENTS` types may be left out)."""
    return FactsFold(session_id).feed(journal).facts()
