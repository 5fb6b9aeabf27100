"""Retention and garbage collection (the store's statistics: :mod:`retrace.engine.store_stats`).

Retention drops the oldest checkpoints beyond the count, age and size quotas; the head is
always kept. Kept checkpoints whose ancestry loses its snapshot get a fresh full-manifest
snapshot, each session journal is rewritten atomically without the dropped checkpoint lines
(other events, and unreadable lines, stay byte for byte), and then every blob no kept manifest
or snapshot references is removed.

Works on explicit collaborators (:class:`GcTarget`: the history, the store layout and blobs, the
head) through their public methods; the engine hands them over with its journal writers closed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from retrace.engine.bookmark_name import bookmarks
from retrace.engine.clock import utc_now
from retrace.engine.config import RetentionPolicy
from retrace.engine.errors import RetraceError
from retrace.engine.history import History
from retrace.engine.manifest import Manifest, encode_snapshot
from retrace.engine.models import GcReport
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import CheckpointEvent, model_of
from retrace.engine.store.journal import journal_lines, reencode
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.seal import verify_line

log = logging.getLogger(__name__)


@dataclass
class GcTarget:
    """What a collection works on. ``manifest_at`` answers for the head from memory."""

    history: History
    layout: StoreLayout
    blobs: BlobStore
    retention: RetentionPolicy
    head_id: str | None
    head: Manifest
    manifest_at: Callable[[str], Manifest]
    removed_blobs: set[str] = field(default_factory=set)
    """Filled by :func:`collect`: every blob id it removed (caches must forget them)."""


def _dir_bytes(path: str, *skip: str) -> int:
    """Bytes of the files under ``path``, leaving out the folders ``skip``."""
    total = 0
    for root, dirs, files in os.walk(path):
        if skip:
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]  # noqa: PTH118
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size  # noqa: PTH118
    return total


def _retention_rank(history: History) -> list[str]:
    """Checkpoints oldest first as retention sees them: other machines' (a bucket still holds
    them; in :attr:`History.order`), then this store's by local creation number. Not simply
    ``order``: there a foreign checkpoint can pull a local parent forward."""
    local = history.local
    return [c for c in history.order if c not in local] + sorted(local, key=local.__getitem__)


def _effective_times(history: History, ranked: list[str]) -> list[float]:
    """Per checkpoint of ``ranked``, the time retention ages it by: the latest ``createdAt`` of
    it and of every checkpoint of its kind (local, or from elsewhere) ranked before it. A
    checkpoint made while the clock was behind is then as new as the newest made before it,
    never older: the times only grow along the creation order, so the age quota, like the
    count and size quotas, drops a prefix of it (the oldest made)."""
    latest = {True: float("-inf"), False: float("-inf")}
    out: list[float] = []
    for cid in ranked:
        local = cid in history.local
        latest[local] = max(latest[local], history.cps[cid].created_at.timestamp())
        out.append(latest[local])
    return out


def store_bytes(layout: StoreLayout) -> int:
    """The bytes the size quota counts (the store without subagent stores and the remote cache)."""
    return _dir_bytes(str(layout.root), str(layout.tasks), str(layout.remote))


def retention_due(history: History, retention: RetentionPolicy, head_id: str | None, size: int) -> bool:
    """Would a collection drop checkpoints now: the count or age quota holds one to drop, or
    ``size`` (:func:`store_bytes`) is over the size quota (cheap: no blob is read)."""
    if size > retention.max_bytes and len(history.order) > 1:
        return True
    return bool(_choose_dropped(history, retention, head_id, 0))


def _choose_dropped(history: History, pol: RetentionPolicy, head_id: str | None, extra: int) -> set[str]:
    """The checkpoints retention drops: the oldest by :func:`_retention_rank`, never the head
    and never a bookmark (a person's "come back here": kept whatever its age, beyond the count
    quota if need be; removing its name makes it ordinary again). Ages are measured back from
    the newest local checkpoint's time when the clock reads later than it (a clock that jumped
    forward, or a store unused for a while, does not age out the latest work at once)."""
    ranked = _retention_rank(history)
    drop: set[str] = set()
    over = len(ranked) - pol.max_checkpoints
    times = _effective_times(history, ranked)
    newest_local = times[-1] if history.local else None
    now = utc_now().timestamp()
    cutoff = (now if newest_local is None else min(now, newest_local)) - pol.max_age_days * 86400
    kept = set(bookmarks(history.cps.values(), history.names))
    for i, cid in enumerate(ranked):
        if cid == head_id or cid in kept:
            continue
        if i < over + extra or times[i] < cutoff:
            drop.add(cid)
    return drop


def collect(t: GcTarget) -> GcReport:
    """Apply retention and sweep unreferenced blobs (the caller holds the writer lock and has
    closed its journal writers: journals are rewritten)."""
    before = _dir_bytes(str(t.layout.root), str(t.layout.tasks), str(t.layout.remote))
    dropped_total = 0
    removed_total = 0
    extra = 0
    while True:
        drop = _choose_dropped(t.history, t.retention, t.head_id, extra)
        if drop:
            _drop_checkpoints(t, drop)
            dropped_total += len(drop)
        removed_total += _sweep_blobs(t)
        size = _dir_bytes(str(t.layout.root), str(t.layout.tasks), str(t.layout.remote))
        if size <= t.retention.max_bytes or len(t.history.order) <= 1:
            break
        # Over the size quota: drop a further tenth of the oldest checkpoints and sweep again.
        extra = max(1, len(t.history.order) // 10)
    after = _dir_bytes(str(t.layout.root), str(t.layout.tasks), str(t.layout.remote))
    return GcReport(
        checkpoints_dropped=dropped_total,
        blobs_removed=removed_total,
        bytes_freed=max(0, before - after),
    )


def _drop_checkpoints(t: GcTarget, drop: set[str]) -> None:
    history = t.history
    kept = [c for c in history.order if c not in drop]
    # Kept checkpoints whose manifest chain runs through a dropped one get their own snapshot
    # (damaged ones have no manifest to snapshot: they stay as they are).
    new_snaps: dict[str, str] = {}
    for cid in kept:
        if cid in history.snapshots or cid in history.damage:
            continue
        chain_ok = False
        for c in history.ancestry(history.cps[cid].parent):
            if c in drop:
                break
            if c in history.snapshots or c in new_snaps:
                chain_ok = True
                break
        if not chain_ok:
            new_snaps[cid] = t.blobs.put(encode_snapshot(t.manifest_at(cid)))
    # Rewrite the journals atomically, in two passes so a crash between two files never leaves a
    # kept checkpoint without a reachable snapshot: first add the snapshots, then drop lines.
    # The first pass also removes, from kept lines, the copies of a dropped parent's data (a
    # checkpoint line carries its parent's delta as redundancy against damage): replay would
    # otherwise rebuild the dropped checkpoint from them.
    _rewrite_journals(t.layout, set(), new_snaps, forget=drop)
    _rewrite_journals(t.layout, drop, {})
    history.drop(drop)
    for cid, sid_ in new_snaps.items():
        history.set_snapshot(cid, sid_)


def _rewritten(
    ev: dict[str, object], drop: set[str], new_snaps: dict[str, str], forget: set[str], *, sealed: bool
) -> bytes | None:
    """The new form of one checkpoint line: ``b""`` to drop it, ``None`` to keep it as it is."""
    cp = ev.get("checkpoint")
    cid = cp.get("id") if isinstance(cp, dict) else None
    if cid in drop:
        return b""
    copy = ev.get("parentDelta")
    stale = isinstance(copy, dict) and copy.get("id") in forget
    if not stale and not (isinstance(cid, str) and cid in new_snaps):
        return None
    if stale:
        ev.pop("parentDelta")
    if isinstance(cid, str) and cid in new_snaps:
        ev["snapshot"] = new_snaps[cid]
    return reencode(ev, sealed=sealed)  # in its own format: a legacy prefix stays legacy


def _rewrite_journals(
    layout: StoreLayout,
    drop: set[str],
    new_snaps: dict[str, str],
    *,
    forget: frozenset[str] | set[str] = frozenset(),
) -> None:
    if not (drop or new_snaps or forget):
        return
    stale = set(forget)
    for sid in layout.session_ids():
        path = layout.journal(sid)
        lines: list[bytes] = []
        changed = False
        for line in journal_lines(path):
            ev = line.event
            # Unreadable lines are kept byte for byte: only verify --repair moves damage.
            new = (
                None
                if ev is None or model_of(ev) is not CheckpointEvent
                else _rewritten(ev, drop, new_snaps, stale, sealed=verify_line(line.raw))
            )
            if new is None:
                lines.append(line.raw)
                continue
            changed = True
            if new:
                lines.append(new)
        if not changed:
            continue
        tmp = path.with_name(path.name + ".gc.tmp")
        with tmp.open("wb") as f:
            f.write(b"".join(line + b"\n" for line in lines))
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)


def _sweep_blobs(t: GcTarget) -> int:
    history = t.history
    live: set[str] = set()
    for cid in history.order:
        snap = history.snapshots.get(cid)
        if snap is not None:
            live.add(snap)
            try:
                live.update(e.hash for e in history.snapshot(snap).values() if e.hash)
            except (RetraceError, ValueError, KeyError, TypeError) as exc:
                # What a damaged snapshot references is unknown: sweeping could delete the
                # only copy of something. Sweep nothing until `retrace verify --repair`.
                log.warning("gc: blob sweep skipped, snapshot of %s is unreadable (%s)", cid, exc)
                return 0
        live.update(history.referenced_blobs(cid))
    live.update(e.hash for e in t.head.values() if e.hash)
    dead = [b for b in t.blobs.local_ids() if b not in live]
    for b in dead:
        t.blobs.remove(b)
    t.blobs.compact_packs()
    t.blobs.remove_stray_tmp()
    t.removed_blobs.update(dead)
    return len(dead)
