"""Which checkpoints a ``list_checkpoints`` page holds (pure: no engine, no I/O; table-tested).

Newest first (the reverse of the engine's creation order). Every given filter must hold:
``session`` and ``kind`` and ``tool`` exactly, ``agent`` exactly as :func:`agent_of` names it,
``path`` a substring of a changed path (either side of a rename), ``text`` a case-insensitive
substring of the label, the tool name or a changed path. ``before`` is a checkpoint id: only
checkpoints older than it are considered (an unknown one is refused, never read as "from the
start"); ``next_before`` is the last row's id when older matches remain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrace.engine.models import Checkpoint

OWN_AGENT = "retrace"
"""The agent name of Retrace's own agent's tool calls."""


class UnknownCursorError(LookupError):
    def __init__(self, cursor: str) -> None:
        super().__init__(
            f"unknown cursor {cursor!r}: pass the nextBefore of a previous list_checkpoints answer"
        )


@dataclass(frozen=True)
class Filters:
    session: str | None = None
    kind: str | None = None
    tool: str | None = None
    path: str | None = None
    agent: str | None = None
    text: str | None = None
    named: frozenset[str] | None = None
    """Only these checkpoint ids (the bookmarks); ``None``: no such criterion."""


def agent_of(cp: Checkpoint, session_agents: Mapping[str, str]) -> str | None:
    """Who made ``cp``: its ``meta.agent``, else its session's agent (the session's
    ``agentSession`` line), else ``retrace`` for a tool call or summary of Retrace's own agent,
    else ``None`` (the user, the command line, the engine's own captures)."""
    agent = cp.meta.get("agent")
    if isinstance(agent, str) and agent:
        return agent
    if cp.session_id in session_agents:
        return session_agents[cp.session_id]
    return OWN_AGENT if cp.kind in ("tool", "summary") else None


def _paths(cp: Checkpoint) -> list[str]:
    out = [f.path for f in cp.files]
    out.extend(f.old_path for f in cp.files if f.old_path is not None)
    return out


def matches(cp: Checkpoint, filters: Filters, session_agents: Mapping[str, str]) -> bool:
    exact = ((filters.session, cp.session_id), (filters.kind, cp.kind), (filters.tool, cp.tool))
    if any(want is not None and want != have for want, have in exact):
        return False
    if filters.named is not None and cp.id not in filters.named:
        return False
    if filters.agent is not None and agent_of(cp, session_agents) != filters.agent:
        return False
    if filters.path is not None and not any(filters.path in p for p in _paths(cp)):
        return False
    if filters.text is None:
        return True
    needle = filters.text.casefold()
    words = [cp.label, cp.tool or "", *_paths(cp)]
    return any(needle in w.casefold() for w in words)


def page(
    checkpoints: Sequence[Checkpoint],
    filters: Filters,
    session_agents: Mapping[str, str],
    *,
    limit: int,
    before: str | None = None,
) -> tuple[list[Checkpoint], str | None]:
    """The newest ``limit`` matching checkpoints older than ``before`` and the next cursor.
    ``checkpoints`` in creation order (oldest first)."""
    end = len(checkpoints)
    if before is not None:
        position = next((i for i, cp in enumerate(checkpoints) if cp.id == before), None)
        if position is None:
            raise UnknownCursorError(before)
        end = position
    rows: list[Checkpoint] = []
    for index in range(end - 1, -1, -1):
        cp = checkpoints[index]
        if not matches(cp, filters, session_agents):
            continue
        if len(rows) == limit:
            return rows, rows[-1].id
        rows.append(cp)
    return rows, None
