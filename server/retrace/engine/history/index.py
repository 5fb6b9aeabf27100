"""The history index: a rebuildable cache that lets an open skip the journal lines replay ignores.

Replay needs few of a session journal's lines: checkpoints, ``checkpointLost`` records, restore
intents and outcomes (interrupted-restore recovery), and damaged lines (reported on every open).
Turns, messages, usage and tool-call events — most of the bytes — are the agent's. For each
journal the index records what it was built from — device, inode, modification time, the
length of the newline-terminated prefix it covered and a digest of that prefix, its line counts
— and, inside that prefix, the offset, length and line number of every line replay needs.

Contracts:

* The journals stay the only source of truth: every needed line is parsed again from the
  journal's own bytes on every open; the index only says where they are.
* Never required: an index that is missing, unreadable, of another version or malformed is
  ignored (every journal is scanned in full, as without an index).
* Per journal, the journal cursor decides (:mod:`retrace.engine.store.cursor`, a ``prefix``
  mark): the recorded prefix is trusted when the journal is the same file (device and
  inode) and either untouched (same length and modification time, and that time older than
  the scan that recorded it by more than :data:`RACY_NS`, so no later write in the same clock
  tick can hide) or its first ``size`` bytes still have the recorded digest (it grew: the
  bytes after the prefix are scanned). Anything else — a shrunk, replaced, rewritten or
  damaged journal (``gc`` and ``verify --repair`` rewrite through a new file) — is scanned in
  full. Cost: an untouched journal is read, not hashed; only journals written since are hashed.
* Checksummed (a damaged index is ignored as a whole) and written atomically (temporary file +
  rename), only when something changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine.history.line_cache import LineCache
from retrace.engine.store.cache_file import read_cache_json, write_cache_json
from retrace.engine.store.cursor import JournalMark as CursorMark
from retrace.engine.store.cursor import fresh, judge, mark_of
from retrace.engine.store.events import (
    CheckpointEvent,
    CheckpointLostEvent,
    CheckpointNameEvent,
    RestoreDoneEvent,
    RestoreIntentEvent,
    model_of,
)
from retrace.engine.store.journal import JournalLine, parse_line
from retrace.engine.store.seal import SealGuard

log = logging.getLogger(__name__)

INDEX_VERSION = 4
"""4: the journal cursor's marks (sha256 digests)."""
NEEDED = frozenset(
    {CheckpointEvent, CheckpointLostEvent, RestoreIntentEvent, RestoreDoneEvent, CheckpointNameEvent}
)
"""Event models replay reads (every damaged line is read too)."""

Span = tuple[int, int, int]
"""(offset, length without the newline, 1-based line number) of one needed line."""


@dataclass(frozen=True)
class JournalMark:
    """What the index knows of one journal's newline-terminated prefix: where the journal
    cursor stood after it (a ``prefix`` mark: identity, length, digest, line count, checked when)
    and, inside it, the lines replay needs."""

    at: CursorMark
    count: int
    """Non-blank lines in the prefix."""
    spans: tuple[Span, ...]
    sealed_from: int = -1
    """Offset of the prefix's first checksummed line (-1: none): a line without a checksum
    after it is damage (:class:`~retrace.engine.store.seal.SealGuard`)."""

    @property
    def size(self) -> int:
        return self.at.offset

    @property
    def digest(self) -> str:
        return self.at.prefix or ""

    @property
    def newlines(self) -> int:
        """Newlines in the prefix (the next line's number is this + 1)."""
        return self.at.lines

    def to_json(self) -> list[object]:
        return [self.at.to_json(), self.count, [list(s) for s in self.spans], self.sealed_from]


@dataclass
class JournalScan:
    """The lines of one journal replay needs, in order, and how many non-blank complete lines
    it has (a torn tail is among ``lines``, marked, and not counted)."""

    lines: list[JournalLine] = field(default_factory=list)
    count: int = 0
    vouched: list[tuple[int, int, int, bool]] = field(default_factory=list)
    """(line number, offset, length, whether it may be a legacy line without a checksum) in
    ``data`` of the needed lines the index located in a trusted prefix, not parsed yet (the
    caller parses them: a checkpoint line in one pass); they precede ``lines``."""
    data: bytes = b""
    """The journal's bytes as read (what ``vouched`` points into)."""
    sealed_from: int = -1
    """Offset of the journal's first checksummed line met so far (-1: none)."""
    prefix: tuple[int, str] | None = None
    """(length, digest) of the recorded prefix ``vouched`` lies in (``None``: none trusted)."""
    hashed: bool = False
    """Whether this scan checked that prefix's digest (the journal grew) rather than trusting
    an untouched journal by its identity."""
    ctime_ns: int = -1
    """The journal's status-change time when read (what a rewrite in place cannot keep)."""
    read_ns: int = 0
    """When it was read (taken before its status: a later write gets a later ctime)."""


def _check(journals: object) -> str:
    """Checksum of the marks themselves (a damaged index must not pass for a valid one)."""
    text = json.dumps(journals, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def needed(line: JournalLine) -> bool:
    return line.event is None or model_of(line.event) in NEEDED


class HistoryIndex:
    """The index of one store (``<store>/cache/history-index.json``)."""

    def __init__(self, path: Path | None, marks: dict[str, JournalMark] | None = None) -> None:
        self.path = path
        self.marks: dict[str, JournalMark] = marks or {}
        self.lines: LineCache | None = None
        """What replay made of the lines of the trusted prefixes (:mod:`.line_cache`; set by
        replay once the origin key is known, saved with the index)."""
        self.changed = False
        self.trusted = 0
        """Journals whose recorded prefix the scans used (for tests and tracing)."""

    # ------------------------------------------------------------------ persistence
    def lines_path(self) -> Path | None:
        return None if self.path is None else self.path.with_name("history-lines.marshal")

    @classmethod
    def load(cls, path: Path) -> HistoryIndex:
        """The index at ``path``; an empty one (every journal is scanned) when it cannot be used."""
        return cls(path, read_cache_json(path, _marks_from_json, "history index"))

    def save(self) -> None:
        """Write the index (and the line cache) atomically when it changed (failures are logged:
        they are only caches)."""
        if self.lines is not None:
            self.lines.save()
        if self.path is None or not self.changed:
            return
        journals = {sid: m.to_json() for sid, m in sorted(self.marks.items())}
        body = {"version": INDEX_VERSION, "check": _check(journals), "journals": journals}
        if not write_cache_json(self.path, body, "history index"):
            return
        self.changed = False

    def forget_except(self, session_ids: Iterable[str]) -> None:
        """Drop the marks of journals that no longer exist."""
        keep = set(session_ids)
        for sid in [s for s in self.marks if s not in keep]:
            del self.marks[sid]
            self.changed = True

    # ------------------------------------------------------------------ scanning
    def scan(self, session_id: str, path: Path) -> JournalScan:
        """The needed lines of journal ``path`` (the same ones, parsed the same way, as filtering
        :func:`~retrace.engine.store.journal.journal_lines`; those of a trusted prefix as
        ``vouched`` bytes, for the caller to parse), refreshing its mark."""
        read_ns = time.time_ns()
        try:
            with path.open("rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            if self.marks.pop(session_id, None) is not None:
                self.changed = True
            return JournalScan()
        mark = self.marks.get(session_id)
        trust = self._trust(mark, st, data) if mark is not None else None
        out = JournalScan(ctime_ns=st.st_ctime_ns, read_ns=read_ns, hashed=trust == "grown")
        if mark is None or trust is None:
            spans: list[Span] = []
            complete = self._scan_from(data, 0, 1, out, spans)
            self._remember(session_id, st, data, complete, spans, sealed_from=out.sealed_from)
            return out
        self.trusted += 1
        first = mark.sealed_from
        out.vouched = [(num, off, length, first < 0 or off < first) for off, length, num in mark.spans]
        out.data = data
        out.count = mark.count
        out.sealed_from = first
        out.prefix = (mark.size, mark.digest)
        if trust == "untouched":
            return out
        spans = list(mark.spans)
        complete = mark.count + self._scan_from(data, mark.size, mark.newlines + 1, out, spans)
        self._remember(session_id, st, data, complete, spans, sealed_from=out.sealed_from)
        return out

    def _remember(
        self, sid: str, st: os.stat_result, data: bytes, count: int, spans: list[Span], *, sealed_from: int
    ) -> None:
        end = data.rfind(b"\n") + 1
        at = mark_of(
            st,
            data[:end],
            offset=end,
            check="prefix",
            lines=data.count(b"\n", 0, end),
            sealed=sealed_from >= 0,
            now_ns=time.time_ns(),
        )
        self.marks[sid] = JournalMark(at, count, tuple(spans), sealed_from)
        self.changed = True

    @staticmethod
    def _trust(mark: JournalMark, st: os.stat_result, data: bytes) -> str | None:
        """``"untouched"``, ``"grown"`` (the prefix is intact), or ``None`` (scan it all): the
        journal cursor's verdict (:func:`~retrace.engine.store.cursor.judge`) over the bytes
        read, and every recorded span still a whole line of the prefix."""
        verdict = judge(mark.at, st, lambda lead, end: data[lead:end], len(data))
        if verdict == "restart" or not all(
            off >= 0
            and off + length < mark.size
            and data[off + length] == 0x0A
            and (off == 0 or data[off - 1] == 0x0A)
            for off, length, _ in mark.spans
        ):
            return None
        # Trusted by its digest (not the racy rule): "grown", so the mark is taken again.
        return "untouched" if fresh(mark.at, st, len(data)) else "grown"

    @staticmethod
    def _scan_from(data: bytes, pos: int, number: int, out: JournalScan, spans: list[Span]) -> int:
        """Scan from ``pos`` (line ``number``) to the end; returns how many non-blank
        newline-terminated lines it met."""
        size = len(data)
        complete = 0
        guard = SealGuard(sealed_seen=out.sealed_from >= 0)
        while pos < size:
            nl = data.find(b"\n", pos)
            end = size if nl < 0 else nl
            raw = data[pos:end]
            if raw.strip():
                line = parse_line(number, raw, last=nl < 0, guard=guard)
                if out.sealed_from < 0 and guard.sealed_seen:
                    out.sealed_from = pos
                if not line.torn_tail:
                    out.count += 1
                complete += nl >= 0
                if needed(line):
                    out.lines.append(line)
                    if nl >= 0:
                        spans.append((pos, end - pos, number))
            pos, number = end + 1, number + 1
        return complete


def _marks_from_json(raw: object) -> dict[str, JournalMark]:
    if not isinstance(raw, dict) or raw.get("version") != INDEX_VERSION:
        raise ValueError("another index version")
    journals = raw["journals"]
    if not isinstance(journals, dict):
        raise TypeError("journals is not an object")
    if raw.get("check") != _check(journals):
        raise ValueError("checksum mismatch")
    marks: dict[str, JournalMark] = {}
    for sid, row in journals.items():
        at, count, spans, sealed_from = row
        if not all(type(v) is int for v in (count, sealed_from)):
            raise TypeError(f"journal {sid}: malformed entry")
        parsed: list[Span] = []
        for span in spans:
            off, length, num = span
            if not all(type(v) is int for v in (off, length, num)):
                raise TypeError(f"journal {sid}: malformed span")
            parsed.append((off, length, num))
        mark = CursorMark.from_json(at)
        if mark.prefix is None:
            raise ValueError(f"journal {sid}: not a prefix mark")
        marks[str(sid)] = JournalMark(mark, count, tuple(parsed), sealed_from)
    return marks
