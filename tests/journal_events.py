"""Journal events for pure-core tests, written as their wire form (what a journal line holds)
and read as a journal reader gives them: typed, a line that does not validate left out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from retrace.engine.store.events import EventSchemaError, JournalEvent, parse_event


def typed(raw: Iterable[Mapping[str, Any]]) -> list[JournalEvent]:
    """The events of ``raw`` (wire form) a reader would yield, in order."""
    out: list[JournalEvent] = []
    for wire in raw:
        try:
            event = parse_event(dict(wire))
        except EventSchemaError:
            continue  # damage: skipped by every reader
        if event is not None:
            out.append(event)
    return out


def one(wire: Mapping[str, Any]) -> JournalEvent:
    """One valid event from its wire form."""
    [event] = typed([wire])
    return event
