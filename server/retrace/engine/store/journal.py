"""Append-only JSON Lines journals, one per session (``sessions/<id>/journal.jsonl``).

An append is ONE ``write`` of a complete line followed by ``fdatasync``: that is the commit
point of a checkpoint. After a crash the last line may be torn; readers skip it, and the next
writer truncates it away so later appends stay line-aligned. A bad line anywhere else is real
corruption: it is skipped and reported (never silently), the rest of the journal still loads.

Every line this version writes is sealed with its own checksum (:mod:`.seal`); a line whose
checksum does not match, or that lacks one where the legacy rule forbids it, is damage like an
unparseable line. The checksum member is removed from the events readers get.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from retrace.engine.store.blobs import write_all
from retrace.engine.store.events import JOURNAL_VERSION, JournalEvent, event_json
from retrace.engine.store.seal import SUM_KEY, SealGuard, check_line, seal_line
from retrace.oscompat import O_BINARY, O_CLOEXEC, fdatasync, fsync_dir

log = logging.getLogger(__name__)


@dataclass
class JournalProblems:
    """Corrupt lines met while reading (``path:line: reason``)."""

    messages: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class JournalLine:
    """One non-blank line of a journal: the parsed event, or why it could not be parsed."""

    number: int
    """1-based line number."""
    raw: bytes
    event: dict[str, Any] | None
    error: str | None = None
    torn_tail: bool = False
    """The unparseable LAST line of the file (a crash tore it): expected, not damage."""
    checksum: bool = False
    """The line is well-formed JSON but its checksum is wrong or missing (``error`` says which)."""


def journal_lines(
    path: Path, start: int = 0, guard: SealGuard | None = None, markers: tuple[bytes, ...] | None = None
) -> Iterator[JournalLine]:
    """Every non-blank line of a journal in order, parsed or with its parse error (``start``:
    from that byte offset, a line start; lines are then numbered from there; ``guard``: the
    legacy rule's state at ``start`` — a fresh one from the file's start; ``markers``: only the
    lines holding one of these bytes (:func:`~retrace.engine.store.events.type_markers`), the
    others passed over undecoded — damage in them is the verifier's to find)."""
    try:
        with path.open("rb") as f:
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return
    lines = data.split(b"\n")
    # A complete journal ends with "\n", so the last element is b"" unless the tail is torn.
    last = len(lines) - 1
    guard = SealGuard() if guard is None else guard
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        if not passed_over(raw, markers, guard):
            yield parse_line(i + 1, raw, last=i == last, guard=guard)


def passed_over(raw: bytes, markers: tuple[bytes, ...] | None, guard: SealGuard) -> bool:
    """Whether a reader of only some event types may pass over line ``raw`` undecoded: it holds
    none of ``markers`` (``None``: every line is decoded). The seal rule's state moves on either
    way (:meth:`SealGuard.pass_over`). The one rule of the full reader and the journal cursor."""
    if markers is None or any(m in raw for m in markers):
        return False
    guard.pass_over(raw)
    return True


def _not_json(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")


_DECODE = json.JSONDecoder(parse_constant=_not_json).decode
"""``json.loads`` but refusing ``NaN`` / ``Infinity`` / ``-Infinity``: Python reads them, they are
not JSON, and no event this version writes holds one (its serializer writes ``null``): a line
holding one is damage or a forgery, and as an event it would not survive its own round trip."""


def parse_line(number: int, raw: bytes, *, last: bool, guard: SealGuard | None = None) -> JournalLine:
    """One non-blank line (without its newline) parsed and its checksum checked; ``last``: it
    is the file's final bytes with no newline after them (a parse failure there is a torn tail,
    not damage); ``guard``: the journal's legacy-rule state (``None``: only the line's own
    checksum is judged, as for a line read out of its journal's order)."""
    try:
        event = _DECODE(raw.decode(json.detect_encoding(raw), "surrogatepass"))
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise ValueError("not an event object")
    except ValueError as exc:
        if last and check_line(raw[:-1]) == "sealed":
            # A complete, checksummed line whose newline was damaged: not a torn write.
            return parse_line(number, raw[:-1], last=False, guard=guard)
        return JournalLine(number, raw, None, str(exc), torn_tail=last)
    seal = check_line(raw)
    if seal == "sealed":  # the common case, decided without the guard's full rule
        if guard is not None:
            guard.sealed_seen = True
        event.pop(SUM_KEY, None)
        return JournalLine(number, raw, event)
    problem = (guard or SealGuard()).problem(seal, event.get("v"))
    if problem is not None:
        return JournalLine(number, raw, None, problem, checksum=True)
    event.pop(SUM_KEY, None)
    return JournalLine(number, raw, event)


def read_journal(
    path: Path,
    problems: JournalProblems | None = None,
    start: int = 0,
    markers: tuple[bytes, ...] | None = None,
) -> Iterator[dict[str, Any]]:
    """Events of one journal in order (from byte offset ``start``, a line start; ``markers``: see
    :func:`journal_lines`). A torn or garbage LAST line is skipped silently; a bad line anywhere
    else is skipped and reported (in ``problems`` and the log)."""
    for line in journal_lines(path, start, markers=markers):
        if line.event is not None:
            yield line.event
        elif line.torn_tail:
            log.info("%s: ignoring torn last line", path)
        else:
            msg = f"{path}:{line.number}: corrupt journal line skipped ({line.error})"
            log.warning(msg)
            if problems is not None:
                problems.messages.append(msg)


def repair_tail(path: Path) -> None:
    """Cut a torn last line so the next append starts on a fresh line."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a torn line.
        chunk = 1 << 16
        pos = size
        cut = 0
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            buf = f.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                cut = start + idx + 1
                break
            pos = start
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())


def seal_event(wire: dict[str, Any]) -> bytes:
    """One journal line (no newline) for the wire form of an event: this format's version and
    the line's checksum as its last member (any checksum ``wire`` carried is dropped)."""
    body = {k: v for k, v in wire.items() if k != SUM_KEY}
    body["v"] = JOURNAL_VERSION
    return seal_line(json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode())


def reencode(event: dict[str, Any], *, sealed: bool) -> bytes:
    """A changed journal line (``gc`` rewrites some) in the format its original had: sealed,
    or a legacy line (so a journal's legacy prefix stays a prefix, :mod:`.seal`)."""
    if sealed:
        return seal_event(event)
    return json.dumps(event, ensure_ascii=True, separators=(",", ":")).encode()


class JournalWriter:
    """Durable appender for one journal file (kept open)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(path)
        created = not path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | O_CLOEXEC | O_BINARY, 0o644)
        if created:
            # Make the new file's directory entry durable too (power loss, not just kill -9).
            fsync_dir(str(path.parent))

    def append(self, event: JournalEvent | dict[str, Any], *, sync: bool = True) -> None:
        """Validate ``event`` against the journal format (:mod:`.events`; raises
        :class:`EventSchemaError`) and append it as one line."""
        line = seal_event(event_json(event)) + b"\n"
        size = os.fstat(self._fd).st_size
        try:
            write_all(self._fd, line)
            if sync:
                fdatasync(self._fd)
        except OSError:
            # A partial line (disk full…) must not glue itself to the next append.
            os.ftruncate(self._fd, size)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
