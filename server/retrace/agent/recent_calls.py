"""The replay buffer: the last 128 tool calls of the workspace's sessions, searchable.

Each entry is the live :class:`~retrace.agent.conversation.ToolCallRecord` (input, output,
status, duration, checkpoint id), so a result arriving later shows up without copying. The
buffer is rebuilt from the session journals on load.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from retrace.agent.conversation import ToolCallRecord
from retrace.camel import CamelModel

CAPACITY = 128


class ToolCallView(CamelModel):
    id: str
    session_id: str
    turn_id: str | None
    tool: str
    input: dict[str, Any]
    status: str | None
    """ok | error | denied | interrupted | cancelled; ``None`` while it runs."""
    output: str | None
    duration_ms: float
    checkpoint_id: str | None
    started_at: float
    """Unix time."""


def _values(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _values(v)
    else:
        yield str(value)


class ReplayBuffer:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._items: deque[tuple[str, ToolCallRecord]] = deque(maxlen=capacity)

    def add(self, session_id: str, record: ToolCallRecord) -> None:
        self._items.append((session_id, record))

    def rebuild(self, records: Iterable[tuple[str, ToolCallRecord]]) -> None:
        self._items.clear()
        for item in sorted(records, key=lambda pair: pair[1].started_at):
            self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def search(
        self, tool: str | None = None, input_contains: str | None = None, session_id: str | None = None
    ) -> list[ToolCallView]:
        """Newest first. ``tool``: exact tool name; ``input_contains``: case-insensitive substring of
        any input field value."""
        needle = input_contains.lower() if input_contains else None
        out: list[ToolCallView] = []
        for sid, record in reversed(self._items):
            if session_id is not None and sid != session_id:
                continue
            if tool is not None and record.tool != tool:
                continue
            if needle is not None and not any(needle in v.lower() for v in _values(record.input)):
                continue
            out.append(
                ToolCallView(
                    id=record.id,
                    session_id=sid,
                    turn_id=record.turn_id,
                    tool=record.tool,
                    input=record.input,
                    status=record.status,
                    output=record.output,
                    duration_ms=record.duration_ms,
                    checkpoint_id=record.checkpoint_id,
                    started_at=record.started_at,
                )
            )
        return out
