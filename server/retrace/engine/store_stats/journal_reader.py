"""The journal events the store's figures and metrics read, kept per journal and read on from
where they stopped.

Each answer, scrape or snapshot reads the store's journals; a long-lived process (the server, its
scrape endpoint) keeps, per journal, the typed events of
:data:`~retrace.engine.store_stats.journal_fold.READ_TYPES` (tool calls slimmed to their ids,
:func:`~retrace.engine.store_stats.journal_fold.slim`) and a
:class:`~retrace.engine.store.cursor.JournalCursor` that reads only what was appended since
(a journal replaced, shortened or rewritten is read again from the start: the cursor says so).
Lines that cannot hold a wanted type are not parsed at all (most lines are messages, tool calls
and usage); damaged lines are left out (the verifier reports them). A torn last line waits for
the next read. Thread-safe.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine.store.cursor import JournalCursor
from retrace.engine.store.events import EventModel, JournalEvent
from retrace.engine.store_stats.journal_fold import READ_TYPES, slim

log = logging.getLogger(__name__)


@dataclass
class _Journal:
    cursor: JournalCursor
    events: list[JournalEvent] = field(default_factory=list)


class JournalReader:
    """Per-journal events, read incrementally (one instance per process is enough); ``only``: the
    event models kept (default: all the fold reads)."""

    def __init__(self, only: tuple[EventModel, ...] = READ_TYPES) -> None:
        self._only = only
        self._journals: dict[str, _Journal] = {}
        self._lock = threading.Lock()

    def events(self, path: Path) -> list[JournalEvent]:
        """The wanted events of the journal at ``path``, oldest first (empty when missing)."""
        key = str(path)
        with self._lock:
            known = self._journals.get(key)
            if known is None:
                known = self._journals[key] = _Journal(JournalCursor(path, only=self._only))
            try:
                read = known.cursor.read()
            except OSError as exc:
                log.info("%s: not read for the metrics (%s)", path, exc)
                return list(known.events)
            if read.restarted:
                known.events.clear()
            known.events.extend(slim(ev) for ev in read.events)
            for problem in read.damaged:
                log.info("event left out of the metrics: %s", problem)
            return list(known.events)


READER = JournalReader()
"""The process's reader (the server's, on every snapshot, scrape and ``retrace/stats`` answer; a
one-shot command may make its own with fewer types)."""
