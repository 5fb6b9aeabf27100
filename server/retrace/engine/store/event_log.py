"""The session journal as an event log: appending a non-checkpoint event and reading events back.

The one place that decides what an event appended from outside the commit path may be (typed, or
a mapping that validates as one; never a checkpoint, which only the engine's commit path writes)
and how a journal reads back as validated JSON events (a damaged line or an event that does not
validate is skipped and logged, the rest still loads). :class:`retrace.engine.Engine` exposes
these as ``append_event`` / ``events`` / ``typed_events``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from retrace.engine.errors import RetraceError
from retrace.engine.store.events import EventSchemaError, JournalEvent, event_json, parse_event
from retrace.engine.store.journal import JournalWriter, read_journal

log = logging.getLogger(__name__)


def append(
    event: JournalEvent | Mapping[str, Any], writer: Callable[[], JournalWriter], *, durable: bool
) -> None:
    """Append ``event`` through the writer ``writer()`` gives (asked for only once the event is
    known to be appendable), fsynced unless ``durable`` is false."""
    raw: JournalEvent | dict[str, Any] = dict(event) if isinstance(event, Mapping) else event
    t = raw.get("type") if isinstance(raw, dict) else raw.type
    if not isinstance(t, str) or not t:
        raise RetraceError("a journal event needs a string 'type'")
    if t == "checkpoint":
        raise RetraceError("checkpoint events are written by the engine only")
    if isinstance(raw, dict):
        raw.setdefault("ts", time.time())
    try:
        writer().append(raw, sync=durable)
    except EventSchemaError as exc:
        raise RetraceError(f"journal event does not match the journal format: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise RetraceError(f"journal event of type {t!r} is not plain JSON: {exc}") from None


def read(path: Path, *, skip: Collection[str] = (), start: int = 0) -> Iterator[dict[str, Any]]:
    """Every event of the journal at ``path`` in order, validated, in JSON form (checkpoints as
    ``{"type": "checkpoint", "checkpoint": {...}}``). A torn last line is skipped; a damaged line
    or a known event type that does not validate is skipped and logged. Types in ``skip`` are left
    out before validation; ``start``: only lines from that byte offset (a line start) on."""
    for raw in read_journal(path, start=start):
        if raw["type"] in skip:
            continue
        try:
            yield event_json(raw)
        except EventSchemaError as exc:
            log.warning("%s: journal event skipped (%s)", path, exc)


def typed(events: Iterator[dict[str, Any]]) -> Iterator[JournalEvent]:
    """``events`` as typed models (types this version does not know are left out)."""
    for raw in events:
        event = parse_event(raw)
        if event is not None:
            yield event
