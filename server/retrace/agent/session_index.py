"""What start-up knows of each session without folding its conversation.

``<store>/cache/agent-sessions.json`` records, per session journal, the journal's stamp (device,
inode, size, modification time) at the moment the agent last folded it and found it SETTLED —
nothing for crash resume to do: no tool call without a result, no unanswered tool batch, no
prompt without a reply — together with what a session list shows (title, creation time, whether
it is an agent session at all).

Contracts:

* A session is skipped at start-up only when its journal's stamp equals the recorded one. Any
  append (a turn, a crash mid-call) changes the size and time, so such a session is folded and
  resumed exactly as before. The record is written after the resume's own writes.
* The file is a cache: missing, unreadable, of another version or malformed means "nothing is
  known" (every session is folded, as without it). Written atomically (temporary file + rename).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.store.cache_file import write_cache_json

log = logging.getLogger(__name__)

VERSION = 1
FILE_NAME = "agent-sessions.json"

Stamp = tuple[int, int, int, int]


def journal_stamp(path: Path) -> Stamp | None:
    """(device, inode, size, mtime in ns) of a journal; ``None`` when it does not exist."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class SessionRecord:
    """A session known to be settled at ``stamp``."""

    stamp: Stamp
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
        try:
            raw = json.loads(path.read_bytes())
            records = _records(raw)
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.info("session index %s ignored (%s): every session is folded", path, exc)
            return cls(path)
        return cls(path, records)

    def settled(self, session_id: str, stamp: Stamp | None) -> SessionRecord | None:
        """The record of ``session_id`` if its journal is unchanged since it was found settled."""
        record = self.records.get(session_id)
        return record if record is not None and stamp is not None and record.stamp == stamp else None

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
                sid: {"stamp": list(r.stamp), "agent": r.agent, "title": r.title, "createdAt": r.created_at}
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
        stamp = row["stamp"]
        if not isinstance(stamp, list) or len(stamp) != 4 or not all(isinstance(v, int) for v in stamp):
            raise TypeError(f"session {sid}: malformed stamp")
        title, created = row.get("title"), row.get("createdAt")
        if not (title is None or isinstance(title, str)) or not (created is None or isinstance(created, str)):
            raise TypeError(f"session {sid}: malformed title or time")
        out[str(sid)] = SessionRecord(
            (stamp[0], stamp[1], stamp[2], stamp[3]), bool(row["agent"]), title, created
        )
    return out
