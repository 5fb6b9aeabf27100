"""THE journal cursor: "what did this journal gain since I last read it?", answered once.

A :class:`JournalMark` is where a reader stopped in one journal: the file's identity (device,
inode), the offset just after the last complete line read, the file's modification time and
when the mark was taken (the racy rule), a digest of the bytes before the offset, the line count
and the seal rule's state (whether a checksummed line came before the offset, :mod:`.seal`: a
line without a checksum after one is damage, even when reading starts in the middle).

:func:`follow` decides, for a mark and the file now:

* ``untouched`` — the same file, of the mark's length, with the mark's modification time, and
  that time older than the mark by more than :data:`RACY_NS` (no later write in the same clock
  tick can hide), or its checked bytes unchanged: nothing to read;
* ``grown`` — the same file, at least as long, its checked bytes unchanged (by digest): the
  bytes after the offset are new;
* ``restart`` — anything else (another file: ``gc`` and ``verify --repair`` rewrite through a
  new one; shorter; rewritten): read from byte 0 again.

What the digest covers is the reader's choice (:data:`Check`): ``tail`` (the last
:data:`TAIL_BYTES` before the offset: constant cost, for readers that follow the engine's
appends) or ``prefix`` (every byte before the offset: readers that vouch for lines they will
not parse again, like the history index). A ``tail`` mark whose file kept its length but not
its modification time restarts (a rewrite in place it cannot rule out).

:func:`read_increment` returns the new complete lines as bytes (a torn or unfinished last line
waits for the next read), :class:`JournalCursor` as typed events (:mod:`.events`): a damaged
line (unparseable, wrong or missing checksum, a known type that does not validate) is skipped
and reported, a type this version does not know is counted, never raised. Every incremental
reader of a journal (the history index, the timeline cache, the metrics, the agent's session
index, the sync push) goes through here.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Literal

from retrace.engine.store.events import (
    EventModel,
    EventSchemaError,
    JournalEvent,
    parse_event,
    type_markers,
    type_names,
)
from retrace.engine.store.journal import parse_line, passed_over
from retrace.engine.store.seal import SealGuard, check_line

RACY_NS = 2_000_000_000
"""A modification time this close to the mark may be followed by a write with the same time."""
TAIL_BYTES = 64 << 10
"""How much before the offset a ``tail`` mark's digest covers."""

Check = Literal["tail", "prefix"]
Verdict = Literal["untouched", "grown", "restart"]


def digest(covered: bytes | memoryview) -> str:
    """The digest a mark records of the bytes it checks."""
    return hashlib.sha256(covered).hexdigest()


def tail_digest(before: bytes) -> str:
    """The ``tail`` digest of a journal whose bytes before the offset end with ``before``."""
    return digest(memoryview(before)[-TAIL_BYTES:])


@dataclass(frozen=True)
class JournalMark:
    """Where a reader stopped in one journal (see the module)."""

    dev: int
    ino: int
    offset: int
    """Just after the last complete line read (0: nothing read)."""
    mtime_ns: int
    checked_ns: int
    tail: str
    """Digest of the last :data:`TAIL_BYTES` (or fewer) bytes before ``offset``."""
    prefix: str | None = None
    """Digest of every byte before ``offset`` (a ``prefix`` mark; ``None``: a ``tail`` mark)."""
    lines: int = 0
    """Newlines before ``offset`` (the next line's number is this + 1)."""
    sealed: bool = False
    """A checksummed line came before ``offset``."""

    @property
    def check(self) -> Check:
        return "tail" if self.prefix is None else "prefix"

    def as_tail(self) -> JournalMark:
        """The same position, checked by its tail only (a follower of appends)."""
        return replace(self, prefix=None)

    def to_json(self) -> list[object]:
        return [
            self.dev,
            self.ino,
            self.offset,
            self.mtime_ns,
            self.checked_ns,
            self.tail,
            self.prefix,
            self.lines,
            self.sealed,
        ]

    @classmethod
    def from_json(cls, raw: object) -> JournalMark:
        """A mark as :meth:`to_json` wrote it; raises TypeError/ValueError when malformed."""
        if not isinstance(raw, list) or len(raw) != 9:
            raise TypeError("a journal mark is a list of 9")
        dev, ino, offset, mtime_ns, checked_ns, tail, prefix, lines, sealed = raw
        if not all(type(v) is int for v in (dev, ino, offset, mtime_ns, checked_ns, lines)):
            raise TypeError("malformed journal mark")
        if (
            not isinstance(tail, str)
            or not (prefix is None or isinstance(prefix, str))
            or type(sealed) is not bool
        ):
            raise TypeError("malformed journal mark")
        if offset < 0 or lines < 0:
            raise ValueError("negative offset")
        return cls(dev, ino, offset, mtime_ns, checked_ns, tail, prefix, lines, sealed)


def follow(mark: JournalMark | None, f: BinaryIO, st: os.stat_result) -> Verdict:
    """Whether the journal open as ``f`` (status ``st``) is the one ``mark`` was taken of, as it
    was (``untouched``), with lines appended (``grown``), or not (``restart``; also without a
    mark). Reads at most the checked bytes, only when the racy rule requires it."""

    def read(lead: int, end: int) -> bytes:
        f.seek(lead)
        return f.read(end - lead)

    return judge(mark, st, read)


def fresh(mark: JournalMark, st: os.stat_result, size: int | None = None) -> bool:
    """The racy rule: the journal (status ``st``, ``size`` bytes) is the file ``mark`` was taken
    of, of its length, with its modification time, older than the mark by more than
    :data:`RACY_NS` — untouched without reading a byte."""
    size = st.st_size if size is None else size
    return (
        (st.st_dev, st.st_ino) == (mark.dev, mark.ino)
        and size == mark.offset
        and st.st_mtime_ns == mark.mtime_ns
        and mark.mtime_ns < mark.checked_ns - RACY_NS
    )


def judge(
    mark: JournalMark | None, st: os.stat_result, read: Callable[[int, int], bytes], size: int | None = None
) -> Verdict:
    """:func:`follow` over any way of reading the journal's bytes ``[lead, end)`` (a reader that
    holds the whole journal in memory passes a slice, and its length as ``size``)."""
    size = st.st_size if size is None else size
    if mark is None or (st.st_dev, st.st_ino) != (mark.dev, mark.ino) or size < mark.offset:
        return "restart"
    if fresh(mark, st, size):
        return "untouched"
    if size == mark.offset and st.st_mtime_ns != mark.mtime_ns and mark.check == "tail":
        return "restart"
    lead = 0 if mark.prefix is not None else max(0, mark.offset - TAIL_BYTES)
    covered = read(lead, mark.offset)
    if len(covered) != mark.offset - lead or (mark.offset and covered[-1:] != b"\n"):
        return "restart"
    if digest(covered) != (mark.tail if mark.prefix is None else mark.prefix):
        return "restart"
    return "untouched" if size == mark.offset else "grown"


def mark_of(
    st: os.stat_result, data: bytes, *, offset: int, check: Check, lines: int, sealed: bool, now_ns: int
) -> JournalMark:
    """The mark at ``offset`` of a journal whose bytes before ``offset`` end with ``data``
    (all of them for a ``prefix`` mark)."""
    view = memoryview(data)
    prefix = digest(view) if check == "prefix" else None
    return JournalMark(
        st.st_dev,
        st.st_ino,
        offset,
        st.st_mtime_ns,
        now_ns,
        digest(view[-TAIL_BYTES:]),
        prefix,
        lines,
        sealed,
    )


@dataclass(frozen=True)
class Increment:
    """What a journal gained since a mark: ``new`` (complete lines, maybe empty) starts at byte
    ``start`` (0 after a restart); ``before`` is the journal's last :data:`TAIL_BYTES` (or fewer)
    bytes before ``start``; ``mark`` is where a reader that took every line of ``new`` stands."""

    start: int
    new: bytes
    before: bytes
    restarted: bool
    mark: JournalMark
    first_line: int
    """The number of ``new``'s first line."""


def read_increment(
    path: Path, mark: JournalMark | None, *, check: Check = "tail", sealed: bool | None = None
) -> Increment | None:
    """The complete lines journal ``path`` gained since ``mark`` (all of them after a restart or
    without a mark); ``None`` when the journal does not exist. ``sealed``: the seal state after
    the new lines (a reader that parsed them knows it; else it is worked out from the bytes)."""
    now_ns = time.time_ns()
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            if mark is not None and fresh(mark, st):
                return Increment(
                    mark.offset, b"", b"", False, replace(mark, checked_ns=now_ns), mark.lines + 1
                )
            # One read from where the checked bytes start (a tail mark: TAIL_BYTES before its
            # offset) to the end; judged on those bytes; only a restart reads from byte 0.
            lead = 0 if mark is None or mark.prefix is not None else max(0, mark.offset - TAIL_BYTES)
            f.seek(lead)
            data = f.read()
            verdict = judge(mark, st, lambda a, b: data[a - lead : b - lead], lead + len(data))
            if mark is not None and verdict == "untouched":
                return Increment(
                    mark.offset, b"", b"", False, replace(mark, checked_ns=now_ns), mark.lines + 1
                )
            base = mark if verdict == "grown" else None
            if base is None and lead:
                f.seek(0)
                data, lead = f.read(), 0
            offset = 0 if base is None else base.offset
            if check == "prefix" and lead:  # a prefix mark after a tail mark: every byte
                f.seek(0)
                data, lead = f.read(), 0
    except FileNotFoundError:
        return None
    before, rest = data[max(0, offset - TAIL_BYTES) - lead : offset - lead], data[offset - lead :]
    new = rest[: rest.rfind(b"\n") + 1]
    was_sealed = base.sealed if base is not None else False
    if sealed is None:
        sealed = was_sealed or any(check_line(raw) == "sealed" for raw in new.split(b"\n") if raw)
    lines = (base.lines if base is not None else 0) + new.count(b"\n")
    upto = data[: offset - lead + len(new)]
    after = mark_of(
        st, upto, offset=offset + len(new), check=check, lines=lines, sealed=sealed, now_ns=now_ns
    )
    first = (base.lines if base is not None else 0) + 1
    return Increment(offset, new, before, base is None and mark is not None, after, first)


@dataclass
class CursorRead:
    """One :meth:`JournalCursor.read`: the new events, whether the journal was read from its
    start again (a reader drops what it kept from it), and what was left out."""

    events: list[JournalEvent] = field(default_factory=list)
    restarted: bool = False
    grew: bool = False
    """Complete lines were appended since the last read (not a restart)."""
    damaged: list[str] = field(default_factory=list)
    """``path:line: reason`` of each damaged line (torn tails excluded: they wait)."""
    unknown: dict[str, int] = field(default_factory=dict)
    """Lines of types this version does not know (a newer writer's), by type."""


class JournalCursor:
    """An incremental typed reader of one journal: each :meth:`read` returns only the events
    appended since the previous one (everything after a restart). ``only``: only events of these
    types are parsed (lines that cannot hold one are not even decoded; damage in them goes
    unreported, the verifier's to find); ``skip``: types left out before validation."""

    def __init__(
        self,
        path: Path,
        mark: JournalMark | None = None,
        *,
        check: Check = "tail",
        only: Collection[EventModel] | None = None,
        skip: Collection[EventModel] = (),
    ) -> None:
        self.path = path
        self.mark = mark
        self.check: Check = check
        self._only = None if only is None else type_names(only)
        self._markers = None if only is None else type_markers(only)
        self._skip = type_names(skip)

    def read(self) -> CursorRead:
        """The events appended since the last read (the cursor moves on to the end of the last
        complete line; a missing journal reads as empty and restarts the cursor)."""
        had = self.mark
        inc = read_increment(self.path, had, check=self.check, sealed=True)
        if inc is None:
            self.mark = None
            return CursorRead(restarted=had is not None)
        out = CursorRead(
            restarted=inc.restarted, grew=bool(inc.new) and not inc.restarted and had is not None
        )
        guard = SealGuard(sealed_seen=inc.start > 0 and had is not None and had.sealed)
        out.events = list(self._events(inc, guard, out))
        self.mark = replace(inc.mark, sealed=guard.sealed_seen)
        return out

    def _events(self, inc: Increment, guard: SealGuard, out: CursorRead) -> Iterator[JournalEvent]:
        number = inc.first_line - 1
        for raw in inc.new.split(b"\n")[:-1]:
            number += 1
            if not raw.strip():
                continue
            if passed_over(raw, self._markers, guard):
                continue
            line = parse_line(number, raw, last=False, guard=guard)
            if line.event is None:
                out.damaged.append(f"{self.path}:{number}: corrupt journal line skipped ({line.error})")
                continue
            kind = line.event["type"]
            if kind in self._skip or (self._only is not None and kind not in self._only):
                continue
            try:
                event = parse_event(line.event)
            except EventSchemaError as exc:
                out.damaged.append(f"{self.path}:{number}: journal event skipped ({exc})")
                continue
            if event is None:
                out.unknown[kind] = out.unknown.get(kind, 0) + 1
            else:
                yield event


def untouched(mark: JournalMark | None, path: Path) -> bool:
    """Whether journal ``path`` is still exactly what ``mark`` was taken of (nothing appended,
    nothing changed); ``False`` without a mark or a journal."""
    if mark is None:
        return False
    try:
        with path.open("rb") as f:
            return follow(mark, f, os.fstat(f.fileno())) == "untouched"
    except FileNotFoundError:
        return False


def end_mark(path: Path, check: Check = "tail") -> JournalMark | None:
    """The mark after the last complete line of journal ``path`` now (``None``: no journal)."""
    inc = read_increment(path, None, check=check)
    return None if inc is None else inc.mark
