"""What the story needs from a session journal: the turns (with prompts, even on abandoned
branches), each tool call's final status and input, and where the conversation was forked.

The journal is append-only, so a turn's prompt survives conversation restores and reloads; the
conversation's current branch (which turns are still live) comes from the agent's own fold of the
same events (:class:`~retrace.agent.conversation.Conversation`), never from a second definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retrace.agent.conversation import Conversation


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

    @property
    def is_agent_session(self) -> bool:
        return bool(self.turns)


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


UNUSED_EVENTS = frozenset({"checkpoint", "usage"})
"""Journal event types the facts do not depend on (readers may leave them out: most of a
journal's bytes are checkpoints)."""


def facts_from_events(session_id: str, journal: Iterable[dict[str, Any]]) -> SessionFacts:
    """Fold one session's journal events (in order) into :class:`SessionFacts` (events of the
    :data:`UNUSED_EVENTS` types may be left out)."""
    events = list(journal)
    facts = SessionFacts(session_id)
    fork: str | None = None
    seen: set[str] = set()
    for event in events:
        kind = event.get("type")
        if kind == "conversationHead" and event.get("reason") == "restore":
            checkpoint_id = event.get("checkpointId")
            fork = checkpoint_id if isinstance(checkpoint_id, str) else None
        elif kind == "turn":
            turn_id = event.get("turnId")
            if not isinstance(turn_id, str) or turn_id in seen:
                continue
            seen.add(turn_id)
            text = event.get("text")
            prompt = text if isinstance(text, str) else ""
            facts.turns.append(TurnFact(turn_id, prompt, parse_time(event.get("createdAt")), fork))
            fork = None
    conversation = Conversation.from_events(session_id, events)
    facts.tools = {
        record.id: ToolFact(record.id, record.tool, record.input, record.status)
        for record in conversation.tool_calls.values()
    }
    live = {m.turn_id for m in conversation.chain()}
    facts.abandoned_turns = {
        m.turn_id for m in conversation.messages.values() if m.turn_id is not None and m.turn_id not in live
    }
    return facts
