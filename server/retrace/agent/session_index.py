"""What start-up knows of each session without folding its conversation.

``<store>/cache/agent-sessions.json`` records, per session journal, where the journal ended (a
:class:`~retrace.engine.store.cursor.JournalMark`) at the moment the agent last folded it and
found it SETTLED —
nothing for crash resume to do: no tool call without a result, no unanswered tool batch, no
prompt without a reply — together with what a session list shows (title, creation time, whether
it is an agent session at all).

Contracts:

* A session is skipped at start-up only when the journal cursor finds its journal untouched
  since the recorded mark (:func:`~retrace.engine.store.cursor.untouched`). Any append (a turn,
  a crash mid-call) or rewrite fails that, so such a session is folded and resumed exactly as
  before. The record is written after the resume's own writes.
* The file is a cache: missing, unreadable, of another version or malformed means "nothing is
  known" (every session is folded, as without it). Written atomically (temporary file + rename).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.store.cache_file import read_cache_json, write_cache_json
from retrace.engine.store.cursor import JournalMark, untouched

log = logging.getLogger(__name__)

VERSION = 2
"""2: a journal cursor's mark instead of a stat stamp."""
FILE_NAME = "agent-sessions.json"


@dataclass(frozen=True)
class SessionRecord:
    """A session known to be settled at ``mark``."""

    mark: JournalMark
    agent: bool
    """It holds a conversation (turns, messages or tool calls); engine-only sessions do not."""
    title: str | None
    created_at: str | None


class SessionIndex:
    def __init__(self, path: Path, records: dict[str, SessionRecord] | None = None) -> None:
        self.path = path
        self.records: dict[str, SessionRecord] = records or {}
        self.changed = False

    @classmethod
    def load(cls, path: Path) -> SessionIndex:
        """The index at ``path``; an empty one (every session is folded) when it cannot be used."""
        return cls(path, read_cache_json(path, _records, "session index"))

    def settled(self, session_id: str, journal: Path) -> SessionRecord | None:
        """The record of ``session_id`` if its journal is untouched since it was found settled."""
        record = self.records.get(session_id)
        return record if record is not None and untouched(record.mark, journal) else None

    def mark(self, session_id: str, record: SessionRecord) -> None:
        if self.records.get(session_id) != record:
            self.records[session_id] = record
            self.changed = True

    def forget(self, session_id: str) -> None:
        if self.records.pop(session_id, None) is not None:
            self.changed = True

    def keep_only(self, session_ids: Iterable[str]) -> None:
        keep = set(session_ids)
        for sid in [s for s in self.records if s not in keep]:
            self.forget(sid)

    def save(self) -> None:
        if not self.changed:
            return
        body = {
            "version": VERSION,
            "sessions": {
                sid: {"mark": r.mark.to_json(), "agent": r.agent, "title": r.title, "createdAt": r.created_at}
                for sid, r in sorted(self.records.items())
            },
        }
        if not write_cache_json(self.path, body, "session index"):
            return
        self.changed = False


def _records(raw: object) -> dict[str, SessionRecord]:
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        raise ValueError("another version")
    sessions = raw["sessions"]
    if not isinstance(sessions, dict):
        raise TypeError("sessions is not an object")
    out: dict[str, SessionRecord] = {}
    for sid, row in sessions.items():
        mark = JournalMark.from_json(row["mark"])
        title, created = row.get("title"), row.get("createdAt")
        if not (title is None or isinstance(title, str)) or not (created is None or isinstance(created, str)):
            raise TypeError(f"session {sid}: malformed title or time")
        out[str(sid)] = SessionRecord(mark, bool(row["agent"]), title, created)
    return out
