"""The journal events the metrics read, kept per journal and read on from where they stopped.

Each scrape or snapshot reads the store's journals; a long-lived process (the server, its scrape
endpoint) keeps, per journal, the typed events of :data:`~retrace.app.metrics.facts.READ_TYPES`
and the offset after the last complete line it read, and reads only what was appended since. A
journal replaced (another inode: ``gc`` rewrites journals), or shorter than that offset, is read
again from the start. Lines that cannot hold a wanted type are not parsed at all (most lines are
messages, tool calls and usage). A torn last line is left for the next read. Thread-safe.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from retrace.app.metrics.facts import READ_TYPES
from retrace.engine.store.events import EventSchemaError, JournalEvent, parse_event

log = logging.getLogger(__name__)

_MARKERS = tuple(f'"{t}"'.encode() for t in READ_TYPES)


@dataclass
class _Journal:
    identity: tuple[int, int]
    end: int = 0
    events: list[JournalEvent] = field(default_factory=list)


class JournalReader:
    """Per-journal events, read incrementally (one instance per process is enough)."""

    def __init__(self) -> None:
        self._journals: dict[str, _Journal] = {}
        self._lock = threading.Lock()

    def events(self, path: Path) -> list[JournalEvent]:
        """The wanted events of the journal at ``path``, oldest first (empty when missing)."""
        try:
            st = path.stat()
        except FileNotFoundError:
            return []
        key = str(path)
        identity = (st.st_dev, st.st_ino)
        with self._lock:
            known = self._journals.get(key)
            if known is None or known.identity != identity or st.st_size < known.end:
                known = self._journals[key] = _Journal(identity)
            self._read_on(path, known)
            return list(known.events)

    def _read_on(self, path: Path, journal: _Journal) -> None:
        try:
            with path.open("rb") as f:
                f.seek(journal.end)
                data = f.read()
        except OSError as exc:
            log.info("%s: not read for the metrics (%s)", path, exc)
            return
        complete = data.rfind(b"\n") + 1  # a torn or unfinished last line waits
        for raw in data[:complete].split(b"\n"):
            if raw.strip() and any(m in raw for m in _MARKERS):
                event = _parse(path, raw)
                if event is not None:
                    journal.events.append(event)
        journal.end += complete


def _parse(path: Path, raw: bytes) -> JournalEvent | None:
    try:
        obj = json.loads(raw)
    except ValueError:
        return None  # damage is the verifier's to report
    if not isinstance(obj, dict) or obj.get("type") not in READ_TYPES:
        return None
    try:
        return parse_event(obj)
    except EventSchemaError as exc:
        log.info("%s: event left out of the metrics (%s)", path, exc)
        return None


READER = JournalReader()
"""The process's reader (the CLI uses it once; the server on every snapshot and scrape)."""
