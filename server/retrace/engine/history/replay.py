"""Replay every session journal into a :class:`History`, keeping damage local.

A bad line (garbage, truncated JSON, wrong schema, NUL bytes) loses only what it held: other
lines still load. Every checkpoint line also carries a copy of its parent's manifest data
(:class:`ParentCopy`), so when a checkpoint's own line is unreadable its manifest is rebuilt from
its child's copy and every descendant stays exact; the rebuilt checkpoint is listed with a note
(its other metadata is gone). A checkpoint whose manifest still cannot be rebuilt — its own
entry and its child's copy are both gone (two adjacent damaged lines, or lines written before
copies existed), or its snapshot blob is missing — stays in the timeline marked damaged with the
reason; checkpoints after a later snapshot are intact. ``checkpointLost`` events (written by
repair) turn such damage into a known loss: still unrestorable, reported as information.

A line whose checksum does not match (or that lost it, :mod:`~retrace.engine.store.seal`) is an
unreadable line like any other. Every path a line holds (delta entries, file changes, editor
buffers, restore intents) passes the one workspace rule
(:func:`~retrace.engine.workspace.stored_rel`) before anything is built from it; one that fails
is damage, reported in :attr:`ReplayReport.bad_paths`, dropped from the delta, and its checkpoint
is listed as ``partial`` with the path among its unrecoverable ones — never an instruction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from retrace.engine.history.graph import History
from retrace.engine.history.index import HistoryIndex, JournalScan, needed
from retrace.engine.history.line_cache import CachedLine, LineCache, Seen
from retrace.engine.history.order import creation_order
from retrace.engine.history.origin import Origins, load_origins
from retrace.engine.history.sanitize import bad_restore_paths, sanitized
from retrace.engine.ids import valid_checkpoint_id
from retrace.engine.manifest import Delta, stored_delta
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import (
    CheckpointEvent,
    CheckpointLostEvent,
    CheckpointNameEvent,
    EventSchemaError,
    ParentCopy,
    RestoreDoneEvent,
    RestoreIntentEvent,
    model_of,
    parse_event,
)
from retrace.engine.store.journal import JournalLine, journal_lines, parse_line
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.seal import SealGuard, check_line

_ID_IN_LINE = re.compile(rb'"checkpoint"\s*:\s*\{[^{}]*?"id"\s*:\s*"([0-9a-z]{4,40})"')
_BLOB_ID = re.compile(r"[0-9a-f]{64}")


@dataclass
class _Parsed:
    cp: Checkpoint
    delta: Delta | None
    snapshot: str | None
    copy_raw: object = None
    """The copy of the parent's manifest data this line carries, as read (parsed by
    :meth:`copy` only when the parent's own line is missing: most never are)."""
    bad_paths: list[tuple[str, str]] = field(default_factory=list)
    """(stored path, why) of every path of the line that failed the workspace rule."""
    origin_raw: object = None
    """The line's ``origin`` as read (untrusted: :mod:`.origin` verifies it)."""
    seq: int | None = None
    """Local creation number when the line is this store's (``None``: from elsewhere)."""
    at: tuple[Path, int] | None = None
    """Where the line is (journal, line number)."""

    def copy(self) -> ParentCopy | None:
        """The parent copy, if present and well-formed (``copy_raw`` may be its JSON text:
        :mod:`.line_cache`)."""
        raw = self.copy_raw
        if isinstance(raw, bytes):
            try:
                raw = json.loads(raw)
            except ValueError:
                return None
        return _parent_copy(raw)


@dataclass
class ReplayReport:
    problems: list[str] = field(default_factory=list)
    """One line per piece of damage found (``path:line: reason`` or ``checkpoint …: reason``)."""
    lost: dict[str, str] = field(default_factory=dict)
    """Checkpoint ids whose own journal entry is unreadable → where and why."""
    bad_lines: list[BadLine] = field(default_factory=list)
    lines: int = 0
    """Journal lines read (blank ones and torn tails excluded)."""
    rebuilt: dict[str, str] = field(default_factory=dict)
    """Checkpoint ids whose own line is unreadable but whose manifest was rebuilt → from which
    child's copy."""
    known_lost: dict[str, str] = field(default_factory=dict)
    """Checkpoint ids recorded as lost by an earlier repair → why (information, not damage)."""
    restore_events: dict[str, list[RestoreIntentEvent | RestoreDoneEvent]] = field(default_factory=dict)
    """Session id → its valid ``restoreIntent``/``restoreDone`` events in journal order (what the
    recovery of interrupted restores reads)."""
    bad_paths: list[BadPath] = field(default_factory=list)
    """Paths in journal lines that are not workspace paths (damage, dropped)."""
    names: list[CheckpointNameEvent] = field(default_factory=list)
    """The valid ``checkpointName`` events, in reading order (:func:`fold_names` decides)."""


@dataclass(frozen=True)
class BadLine:
    """A damaged journal line: where, why, and whose checkpoint it held (when known)."""

    path: Path
    number: int
    reason: str
    checkpoint_id: str | None
    malformed_checkpoint: bool
    checksum: bool = False
    """Well-formed JSON whose checksum is wrong or missing (changed or damaged content)."""


@dataclass(frozen=True)
class BadPath:
    """A path of a readable journal line that fails the workspace rule (dropped, never used)."""

    path: Path
    number: int
    stored: str
    reason: str
    checkpoint_id: str | None


class _CheckpointLine(BaseModel):
    """A checkpoint journal line as :func:`_fast_checkpoint` reads it."""

    model_config = ConfigDict(extra="ignore")
    type: Literal["checkpoint"]
    checkpoint: Checkpoint
    delta: dict[str, Any] | None = None
    snapshot: str | None = None
    parent_delta: Any = Field(default=None, alias="parentDelta")
    v: Any = None
    origin: Any = None


def _fast_checkpoint(raw: bytes, legacy_ok: bool) -> _Parsed | None:
    """A well-formed checkpoint line whose checksum matches parsed in one pass (pydantic's JSON
    parser builds the checkpoint with no dict in between: a 10,000-checkpoint store is read on
    every open); ``None`` for any other line, well-formed or not: the caller then parses it as
    :func:`_parse_checkpoint` does, which gives the same result for a good checkpoint line and
    the reasons for a bad one. ``legacy_ok``: a line without a checksum may stand here."""
    seal = check_line(raw)
    if seal == "broken" or (seal == "legacy" and not legacy_ok):
        return None
    try:
        line = _CheckpointLine.model_validate_json(raw)
        if seal == "legacy" and line.v not in (None, 1):
            return None
        return _checked(line.checkpoint, line.delta, line.snapshot, line.parent_delta, line.origin)
    except (ValueError, KeyError, TypeError):  # ValidationError is a ValueError
        return None


def _parse_checkpoint(ev: dict[str, Any]) -> _Parsed:
    """A checkpoint event's content; ``ValueError`` (or ``KeyError``/``TypeError``) if malformed."""
    raw_delta = ev.get("delta")
    if raw_delta is not None and not isinstance(raw_delta, dict):
        raise ValueError("delta is not an object")
    return _checked(
        Checkpoint.model_validate(ev["checkpoint"]),
        raw_delta,
        ev.get("snapshot"),
        ev.get("parentDelta"),
        ev.get("origin"),
    )


def _checked(
    cp: Checkpoint, raw_delta: dict[str, Any] | None, snap: object, parent_delta: Any, origin: Any = None
) -> _Parsed:
    """The rules of a checkpoint line, whichever way it was parsed: ids of the one id format
    (untrusted input), a delta and/or a snapshot blob id; a damage mark is never read from a
    line (replay decides it)."""
    if not valid_checkpoint_id(cp.id):
        raise ValueError(f"checkpoint id {cp.id[:40]!r} is not a valid id")
    if cp.parent is not None and not valid_checkpoint_id(cp.parent):
        raise ValueError(f"parent checkpoint id {cp.parent[:40]!r} is not a valid id")
    if cp.damage is not None:
        cp = cp.model_copy(update={"damage": None})
    bad: list[tuple[str, str]] = []
    delta = None
    if raw_delta is not None:
        delta, bad = stored_delta(raw_delta)
    if snap is not None and not (isinstance(snap, str) and _BLOB_ID.fullmatch(snap)):
        raise ValueError("snapshot is not a blob id")
    if delta is None and snap is None:
        raise ValueError("neither delta nor snapshot")
    cp, bad = sanitized(cp, bad)
    return _Parsed(cp, delta, snap, parent_delta, bad_paths=bad, origin_raw=origin)


def _parent_copy(raw: object) -> ParentCopy | None:
    """The parent copy of a line; ``None`` when absent or malformed (the line's own checkpoint
    is intact either way: a bad copy only loses the redundancy)."""
    if not isinstance(raw, dict):
        return None
    try:
        copy = ParentCopy.model_validate(raw)
        if copy.delta is not None and stored_delta(copy.delta)[1]:
            return None  # a path or entry that fails the rules: the copy is not usable
    except (ValidationError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if copy.snapshot is not None and not re.fullmatch(r"[0-9a-f]{64}", copy.snapshot):
        return None
    if not valid_checkpoint_id(copy.id) or not (copy.parent is None or valid_checkpoint_id(copy.parent)):
        return None
    return copy if copy.delta is not None or copy.snapshot is not None else None


def _salvage_id(raw: bytes, ev: dict[str, Any] | None) -> str | None:
    if ev is not None:
        cp = ev.get("checkpoint")
        if isinstance(cp, dict) and valid_checkpoint_id(cp.get("id")):
            return str(cp["id"])
    m = _ID_IN_LINE.search(raw)
    return m.group(1).decode() if m and valid_checkpoint_id(m.group(1).decode()) else None


def _scan(path: Path, sid: str, index: HistoryIndex | None) -> JournalScan:
    if index is not None:
        return index.scan(sid, path)
    scan = JournalScan()
    for line in journal_lines(path, guard=SealGuard()):
        scan.count += 0 if line.torn_tail else 1
        if needed(line):
            scan.lines.append(line)
    return scan


def _read_all(
    layout: StoreLayout,
    report: ReplayReport,
    index: HistoryIndex | None,
    origins: Origins,
    sids: list[str] | None = None,
) -> dict[str, _Parsed]:
    parsed: dict[str, _Parsed] = {}
    cache = index.lines if index is not None else None
    for sid in layout.session_ids() if sids is None else sids:
        path = layout.journal(sid)
        scan = _scan(path, sid, index)
        mark = index.marks.get(sid) if index is not None else None
        seen = None
        if mark is not None:
            now = (mark.size, mark.digest, mark.newlines)
            seen = Seen(scan.prefix, scan.hashed, scan.ctime_ns, scan.read_ns, now)
        journal = _Journal(sid, path, origins, cache if seen is not None else None, seen)
        use = cache is not None and seen is not None and cache.usable(sid, seen)
        report.lines += scan.count
        for number, off, length, legacy_ok in scan.vouched:
            hit = cache.lookup(sid, seen, number) if use and cache and seen else None
            if hit is not None:
                _put(_from_cache(hit), journal, number, parsed, report, cached=True)
                continue
            raw = scan.data[off : off + length]
            p = _fast_checkpoint(raw, legacy_ok)
            if p is not None:
                _put(p, journal, number, parsed, report)
            else:
                line = parse_line(number, raw, last=False, guard=SealGuard(sealed_seen=not legacy_ok))
                _take(line, journal, parsed, report)
        for line in scan.lines:
            _take(line, journal, parsed, report)
    return parsed


@dataclass(frozen=True)
class _Journal:
    """The journal being read: its session id (its folder's name), its path, and the key to
    whose lines are this store's (:mod:`.origin`)."""

    sid: str
    path: Path
    origins: Origins
    cache: LineCache | None = None
    """Where to keep what this replay makes of its lines (:mod:`.line_cache`)."""
    seen: Seen | None = None
    """How the history index's scan saw it (what the cache is keyed by)."""


def _from_cache(hit: CachedLine) -> _Parsed:
    p = _Parsed(hit.cp, hit.delta, hit.snapshot, hit.copy_raw, bad_paths=hit.bad_paths)
    p.seq = hit.seq
    return p


def _put(
    p: _Parsed,
    journal: _Journal,
    number: int,
    parsed: dict[str, _Parsed],
    report: ReplayReport,
    *,
    cached: bool = False,
) -> None:
    """Keep one parsed checkpoint line (its paths that failed the workspace rule reported as
    damage). Another line with the same id (a collision across machines, a forged session)
    never replaces this store's own: the local line wins, else the first read; the one set
    aside is reported as damage."""
    for stored, reason in p.bad_paths:
        report.bad_paths.append(BadPath(journal.path, number, stored, reason, p.cp.id))
        report.problems.append(f"{journal.path}:{number}: checkpoint {p.cp.id}: {reason} (ignored)")
    if not cached:  # a cached line's number was computed under the same key when it was cached
        p.seq = journal.origins.local_seq(journal.sid, p.cp.id, p.origin_raw)
        if journal.cache is not None and journal.seen is not None:
            line = CachedLine(p.cp, p.delta, p.snapshot, p.seq, p.bad_paths, p.copy_raw)
            journal.cache.remember(journal.sid, journal.seen, number, line)
    p.at = (journal.path, number)
    kept = parsed.get(p.cp.id)
    if kept is not None:
        aside = p if kept.seq is not None or p.seq is None else kept
        reason = f"checkpoint id {p.cp.id} appears in more than one journal (this copy is ignored)"
        where, line_no = aside.at or (journal.path, number)
        report.problems.append(f"{where}:{line_no}: {reason}")
        report.bad_lines.append(BadLine(where, line_no, reason, None, True))
        p = kept if aside is p else p
    parsed[p.cp.id] = p


def _take(line: JournalLine, journal: _Journal, parsed: dict[str, _Parsed], report: ReplayReport) -> None:
    """One needed line of ``journal`` into ``parsed`` (a checkpoint) or ``report``."""
    sid, path = journal.sid, journal.path
    if line.torn_tail:
        return
    ev = line.event
    is_cp = ev is not None and model_of(ev) is CheckpointEvent
    if ev is not None and not is_cp:
        bad = bad_restore_paths(ev)
        for stored, reason in bad:
            report.bad_paths.append(BadPath(path, line.number, stored, reason, None))
            report.problems.append(f"{path}:{line.number}: {ev.get('type')} event: {reason} (ignored)")
        if not bad:
            _note_other(sid, ev, report, f"{path}:{line.number}")
        return
    where = f"{path}:{line.number}"
    if ev is None and line.checksum:
        reason = f"damaged journal line: {line.error}"
    elif ev is None:
        reason = f"unreadable journal line ({line.error})"
    else:
        try:
            p = _parse_checkpoint(ev)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            reason = f"malformed checkpoint entry ({str(exc).splitlines()[0]})"
        else:
            _put(p, journal, line.number, parsed, report)
            return
    report.problems.append(f"{where}: {reason}")
    cid = _salvage_id(line.raw, ev)
    report.bad_lines.append(BadLine(path, line.number, reason, cid, ev is not None, line.checksum))
    if cid is not None:
        report.lost[cid] = f"its journal entry is damaged ({where})"


def _note_other(sid: str, ev: dict[str, Any], report: ReplayReport, where: str) -> None:
    model = model_of(ev)
    if model is CheckpointLostEvent and isinstance(ev.get("id"), str):
        report.known_lost.setdefault(str(ev["id"]), str(ev.get("reason") or "lost"))
    elif model in (RestoreIntentEvent, RestoreDoneEvent, CheckpointNameEvent):
        try:
            event = parse_event(ev)
        except EventSchemaError as exc:  # a forged or damaged line: never trusted
            if model is CheckpointNameEvent:
                report.problems.append(f"{where}: bookmark name skipped ({exc})")
            return
        if isinstance(event, (RestoreIntentEvent, RestoreDoneEvent)):
            report.restore_events.setdefault(sid, []).append(event)
        elif isinstance(event, CheckpointNameEvent):
            report.names.append(event)


def fold_names(events: list[CheckpointNameEvent]) -> dict[str, str]:
    """Checkpoint id → its name from ``checkpointName`` events: the newest event (by its time;
    reading order among equal times) wins; ``""``: its name was removed (a ``manual``
    checkpoint's label no longer counts as one either)."""
    names: dict[str, str] = {}
    for event in sorted(events, key=lambda e: e.ts):  # stable: reading order breaks ties
        names[event.checkpoint_id] = event.name
    return names


def _rebuild_lost(parsed: dict[str, _Parsed], report: ReplayReport) -> None:
    """Add to ``parsed`` every checkpoint whose own line is gone but whose child carries a copy
    of its manifest data. Its metadata (files, label, tool…) is gone: it is listed under the
    child's session with a label saying so; its manifest is exact."""
    for child_id in sorted(parsed):
        child = parsed[child_id]
        if child.cp.parent is None or child.cp.parent in parsed:
            continue
        copy = child.copy()
        if copy is None or copy.id in parsed or copy.id != child.cp.parent:
            continue
        where = report.lost.get(copy.id, "no readable journal entry")
        try:
            created = datetime.fromisoformat(copy.created_at or "")
        except ValueError:
            created = child.cp.created_at
        cp = Checkpoint(
            id=copy.id,
            parent=copy.parent,
            session_id=child.cp.session_id,
            kind=copy.kind if copy.kind in _KINDS else "external",
            label="journal entry lost: file changes rebuilt from the next checkpoint",
            created_at=created,
            recoverability="full" if _all_stored(copy) else "partial",
            meta={"rebuiltFrom": child_id, "lostEntry": where},
        )
        delta = stored_delta(copy.delta)[0] if copy.delta is not None else None
        # Its child's line says whose it is: the parent of a local line was this store's head.
        parsed[copy.id] = _Parsed(cp, delta, copy.snapshot, seq=child.seq)
        report.rebuilt[copy.id] = child_id


_KINDS = ("baseline", "tool", "external", "safety", "restore", "manual", "summary", "background")


def _all_stored(copy: ParentCopy) -> bool:
    return all(
        e is None or e.get("kind") != "file" or e.get("hash") is not None
        for e in (copy.delta or {}).values()
        if e is None or isinstance(e, dict)
    )


def replay(
    layout: StoreLayout, history: History, present: set[str], index: HistoryIndex | None = None
) -> ReplayReport:
    """Load every journal under ``layout`` into ``history`` (which must be empty).
    ``present``: ids of the stored blobs (a snapshot not among them is damage). ``index``: where
    the needed lines are (:mod:`.index`; refreshed here, saved by the caller); ``None`` reads
    every journal in full. The result is the same either way."""
    report = ReplayReport()
    history.origins = load_origins(layout)
    if index is not None and (where := index.lines_path()) is not None:
        index.lines = LineCache.load(where, history.origins.key, history.origins.legacy)
    parsed = _read_all(layout, report, index, history.origins)
    if index is not None:
        index.forget_except(layout.session_ids())
    _rebuild_lost(parsed, report)
    _add_all(history, parsed, report, present)
    history.names = fold_names(report.names)
    unknown = sorted(c for c in history.damage if c not in report.known_lost)
    if unknown:
        report.problems.append(
            f"{len(unknown)} checkpoint(s) cannot be restored because the store is damaged: "
            + _shown(unknown)
        )
    return report


def _add_all(
    history: History, parsed: dict[str, _Parsed], report: ReplayReport, present: set[str]
) -> list[str]:
    """Add the parsed checkpoints ``history`` does not have yet, in creation order (parents
    first: :mod:`.order`); their ids. A checkpoint in a parent loop is left out, as damage."""
    added: list[str] = []
    fresh = [cid for cid in parsed if cid not in history.cps]
    ordered, looped = creation_order(
        fresh, lambda c: parsed[c].cp.parent, {c: s for c in fresh if (s := parsed[c].seq) is not None}
    )
    for cid in sorted(looped):  # left out: every walk up an ancestry must end
        loops = "its chain of parents loops back to itself"
        report.problems.append(f"checkpoint {cid}: {loops}")
        report.lost.setdefault(cid, loops)
        where, number = parsed[cid].at or (Path(), 0)
        report.bad_lines.append(BadLine(where, number, f"checkpoint {cid}: {loops}", cid, True))
    for cid in ordered:
        p = parsed[cid]
        cp = p.cp
        parent_depth = history.snap_depth.get(cp.parent or "", 0)
        history.add(cp, p.delta, p.snapshot, parent_depth + 1 + len(p.delta or ()), p.seq)
        added.append(cid)
        reason = _damage(history, cp, p, report, present)
        if reason is not None:
            if cid in report.known_lost:
                reason = f"lost (recorded by repair): {report.known_lost[cid]}"
            history.mark_damaged(cid, reason)
    return added


def adopt(layout: StoreLayout, history: History, present: set[str], sids: list[str]) -> list[str]:
    """Add to an already replayed ``history`` the checkpoints of journals ``sids`` it does not
    have yet (sessions imported from a remote, or lines pulled since), damage marked as on a
    full replay; returns the ids added. The head is left alone."""
    report = ReplayReport()
    parsed = _read_all(layout, report, None, history.origins, sids)
    for cid in [c for c in parsed if c in history.cps]:
        del parsed[cid]  # what this history holds stays as it is (an id read again is not news)
    _rebuild_lost(parsed, report)
    added = _add_all(history, parsed, report, present)
    if added:
        history.order[:], _ = creation_order(history.order, lambda c: history.cps[c].parent, history.local)
    return added


def _damage(
    history: History, cp: Checkpoint, p: _Parsed, report: ReplayReport, present: set[str]
) -> str | None:
    """Why ``cp``'s manifest cannot be rebuilt, or ``None`` (its ancestors are already replayed)."""
    parent = cp.parent
    if p.seq is None and parent in history.local and not _copy_matches(history, parent, p.copy()):
        return (
            f"its parent id {parent} names one of this store's checkpoints, whose data differs "
            "from the copy its line carries (an id made on two machines)"
        )
    if p.snapshot is not None:
        return None if p.snapshot in present else f"its manifest snapshot {p.snapshot} is missing"
    if parent is None:
        return "it has no parent and no manifest snapshot"
    if parent in history.damage:
        return f"it depends on damaged checkpoint {parent}"
    if parent not in history.cps:
        lost = report.lost.get(parent)
        return (
            f"its parent checkpoint {parent} is lost: "
            + (lost or "no readable journal entry")
            + " (and no later line holds a copy of its changes)"
        )
    return None


def _copy_matches(history: History, parent: str, copy: ParentCopy | None) -> bool:
    """Does a foreign line's copy of its parent's data match this store's checkpoint of that
    id? (No copy: nothing says otherwise; lines written before copies existed.)"""
    if copy is None:
        return True
    if copy.id != parent or (copy.snapshot is not None and copy.snapshot != history.snapshots.get(parent)):
        return False
    return copy.delta is None or stored_delta(copy.delta)[0] == history.deltas.get(parent)


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
