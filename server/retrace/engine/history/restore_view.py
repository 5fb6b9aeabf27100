"""The engine as the recovery of interrupted restores sees it on open, reading only what replay read.

Recovery looks for a ``restoreIntent`` without its ``restoreDone`` in every session journal.
Replay has just read exactly those events (:attr:`ReplayReport.restore_events`), so on open
recovery is handed this view: the same engine, whose ``sessions``/``events`` answer from them
instead of reading and validating every journal line again. Everything else is the engine's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from retrace.engine.models import Checkpoint, FileEntry
from retrace.engine.store.events import EventSchemaError, JournalEvent, event_json


class _Engine(Protocol):
    workspace: Path
    store_dir: Path

    @property
    def head(self) -> Checkpoint: ...

    def append_event(
        self, event: JournalEvent | Mapping[str, Any], *, session_id: str | None = None, durable: bool = True
    ) -> None: ...

    def timeline(self, session_id: str | None = None) -> list[Checkpoint]: ...

    def manifest(self, cp_id: str) -> dict[str, FileEntry]: ...

    def read_blob(self, blob_id: str) -> bytes: ...


class RestoreEventsView:
    """``engine`` with ``sessions()``/``events()`` limited to the restore events replay read."""

    def __init__(self, engine: _Engine, restore_events: Mapping[str, list[dict[str, Any]]]) -> None:
        self._engine = engine
        self._events = restore_events
        self.workspace = engine.workspace
        self.store_dir = engine.store_dir

    @property
    def head(self) -> Checkpoint:
        return self._engine.head

    def append_event(
        self, event: JournalEvent | Mapping[str, Any], *, session_id: str | None = None, durable: bool = True
    ) -> None:
        self._engine.append_event(event, session_id=session_id, durable=durable)

    def sessions(self) -> list[str]:
        return sorted(self._events)

    def events(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Validated like :meth:`Engine.events` (an event that does not validate is skipped)."""
        for raw in self._events.get(session_id or "", []):
            try:
                yield event_json(raw)
            except EventSchemaError:
                continue

    def timeline(self, session_id: str | None = None) -> list[Checkpoint]:
        return self._engine.timeline(session_id)

    def manifest(self, cp_id: str) -> dict[str, FileEntry]:
        return self._engine.manifest(cp_id)

    def read_blob(self, blob_id: str) -> bytes:
        return self._engine.read_blob(blob_id)
