"""The session journal as an event log: appending a non-checkpoint event and reading events back.

The one place that decides what an event appended from outside the commit path may be (a typed
:data:`~retrace.engine.store.events.JournalEvent` — never a mapping, never a checkpoint, which
only the engine's commit path writes) and how a journal reads back: as typed events
(:func:`read`: damaged lines and types this version does not know are left out, reported in an
:class:`EventReport` and logged; the rest still loads). :class:`retrace.engine.Engine` exposes
these as ``append_event`` / ``events``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine.errors import RetraceError
from retrace.engine.store.events import (
    EVENT_MODELS,
    KNOWN_TYPES,
    CheckpointEvent,
    EventModel,
    EventSchemaError,
    JournalEvent,
    parse_event,
    type_markers,
    type_names,
)
from retrace.engine.store.journal import JournalProblems, JournalWriter, read_journal

log = logging.getLogger(__name__)


_TYPED = EVENT_MODELS


def append(event: JournalEvent, writer: Callable[[], JournalWriter], *, durable: bool) -> None:
    """Append the typed ``event`` through the writer ``writer()`` gives (asked for only once the
    event is known to be appendable), fsynced unless ``durable`` is false. A mapping is refused:
    build the model (or :func:`~retrace.engine.store.events.parse_event` one), so every event
    written is one this version knows and has validated."""
    if not isinstance(event, _TYPED):
        raise RetraceError(
            f"a journal event must be one of the journal's event models, not {type(event).__name__} "
            "(build one, or parse a mapping with parse_event)"
        )
    if isinstance(event, CheckpointEvent):
        raise RetraceError("checkpoint events are written by the engine only")
    try:
        writer().append(event, sync=durable)
    except EventSchemaError as exc:
        raise RetraceError(f"journal event does not match the journal format: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise RetraceError(f"journal event of type {event.type!r} is not plain JSON: {exc}") from None


@dataclass
class EventReport:
    """What :func:`read` left out: damaged lines (``path:line: reason``), events of a known type
    that do not validate, and how many lines of each type this version does not know."""

    damaged: list[str] = field(default_factory=list)
    unknown: Counter[str] = field(default_factory=Counter)


def read(
    path: Path,
    report: EventReport | None = None,
    *,
    skip: Collection[EventModel] = (),
    only: Collection[EventModel] | None = None,
    start: int = 0,
) -> Iterator[JournalEvent]:
    """Every event of the journal at ``path`` in order, typed. A torn last line is skipped; a
        damaged line (unparseable, wrong checksum) or a known type that does not validate is skipped,
        logged and reported; a type this version does not know (a newer writer's) is counted, not
        damage. Events of the ``skip`` models (of models not in ``only``) are left out before
    validation; with ``only``, lines that cannot hold one of its events are not even decoded
    (damage in them goes unreported: the verifier's to find); ``start``: only lines
        from that byte offset (a line start) on (incremental readers use the journal cursor,
        :mod:`~retrace.engine.store.cursor`, which also carries the seal rule's state)."""
    report = EventReport() if report is None else report
    skipped = type_names(skip) if only is None else KNOWN_TYPES - type_names(only) | type_names(skip)
    markers = None if only is None else type_markers(only)
    problems = JournalProblems()
    for raw in read_journal(path, problems, start=start, markers=markers):
        kind = raw["type"]
        if kind in skipped:
            continue
        try:
            event = parse_event(raw)
        except EventSchemaError as exc:
            log.warning("%s: journal event skipped (%s)", path, exc)
            report.damaged.append(f"{path}: journal event skipped ({exc})")
            continue
        if event is None:
            report.unknown[str(kind)] += 1
        else:
            yield event
    report.damaged.extend(problems.messages)
