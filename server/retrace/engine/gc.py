"""Retention, garbage collection and store statistics.

Retention drops the oldest checkpoints beyond the count, age and size quotas; the head is
always kept. Kept checkpoints whose ancestry loses its snapshot get a fresh full-manifest
snapshot, each session journal is rewritten atomically without the dropped checkpoint lines
(other events stay), and then every blob no kept manifest or snapshot references is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import TYPE_CHECKING

from retrace.engine.manifest import encode_snapshot
from retrace.engine.models import GcReport, StoreStats
from retrace.engine.stats import summarize
from retrace.engine.store.journal import journal_lines, read_journal

if TYPE_CHECKING:
    from retrace.engine.engine import Engine


def _dir_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size  # noqa: PTH118
    return total


def store_stats(eng: Engine) -> StoreStats:
    layout = eng._layout
    blobs = eng._blobs
    n, blob_bytes, raw = blobs.usage()
    journal_bytes = 0
    restore_ms: list[float] = []
    restores = ok = 0
    for sid in layout.session_ids():
        jp = layout.journal(sid)
        journal_bytes += jp.stat().st_size
        for ev in read_journal(jp):
            # Success rate is over restores that changed (or tried to change) the workspace:
            # a conflict refusal or a nothing-to-restore is the engine working as intended.
            if ev.get("type") == "restore" and ev.get("kind") in ("applied", "failed"):
                restores += 1
                ok += ev.get("kind") == "applied"
                d = ev.get("durationMs")
                if isinstance(d, int | float):
                    restore_ms.append(float(d))
    return StoreStats(
        checkpoints=len(eng._order),
        sessions=len(eng.sessions()),
        blobs=n,
        blob_bytes=blob_bytes,
        raw_bytes=raw,
        journal_bytes=journal_bytes,
        total_bytes=_dir_bytes(str(layout.root)),
        capture=summarize([eng._cps[c].capture_ms for c in eng._order if eng._cps[c].kind != "baseline"]),
        restore=summarize(restore_ms),
        restores=restores,
        restores_succeeded=ok,
    )


def _choose_dropped(eng: Engine, extra: int) -> set[str]:
    pol = eng.config.retention
    order = eng._order
    head = eng._head_id
    drop: set[str] = set()
    over = len(order) - pol.max_checkpoints
    cutoff = time.time() - pol.max_age_days * 86400
    for i, cid in enumerate(order):
        if cid == head:
            continue
        if i < over + extra or eng._cps[cid].created_at.timestamp() < cutoff:
            drop.add(cid)
    return drop


def collect(eng: Engine) -> GcReport:
    eng._require_writer()
    before = _dir_bytes(str(eng._layout.root))
    dropped_total = 0
    removed_total = 0
    extra = 0
    while True:
        drop = _choose_dropped(eng, extra)
        if drop:
            _drop_checkpoints(eng, drop)
            dropped_total += len(drop)
        removed_total += _sweep_blobs(eng)
        size = _dir_bytes(str(eng._layout.root))
        if size <= eng.config.retention.max_bytes or len(eng._order) <= 1:
            break
        # Over the size quota: drop a further tenth of the oldest checkpoints and sweep again.
        extra = max(1, len(eng._order) // 10)
    after = _dir_bytes(str(eng._layout.root))
    return GcReport(
        checkpoints_dropped=dropped_total,
        blobs_removed=removed_total,
        bytes_freed=max(0, before - after),
    )


def _drop_checkpoints(eng: Engine, drop: set[str]) -> None:
    history = eng._history
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
            new_snaps[cid] = eng._blobs.put(encode_snapshot(eng._manifest_at(cid)))
    # Rewrite the journals atomically, in two passes so a crash between two files never leaves a
    # kept checkpoint without a reachable snapshot: first add the snapshots, then drop lines.
    for w in eng._writers.values():
        w.close()
    eng._writers.clear()
    if new_snaps:
        _rewrite_journals(eng, set(), new_snaps)
    _rewrite_journals(eng, drop, {})
    history.drop(drop)
    for cid, sid_ in new_snaps.items():
        history.set_snapshot(cid, sid_)
    eng._rebuild_provenance()


def _rewrite_journals(eng: Engine, drop: set[str], new_snaps: dict[str, str]) -> None:
    for sid in eng._layout.session_ids():
        path = eng._layout.journal(sid)
        lines: list[bytes] = []
        changed = False
        for line in journal_lines(path):
            ev = line.event
            if ev is None or ev.get("type") != "checkpoint":
                # Unreadable lines are kept byte for byte: only verify --repair moves damage.
                lines.append(line.raw)
                continue
            cp = ev.get("checkpoint")
            cid = cp.get("id") if isinstance(cp, dict) else None
            if cid in drop:
                changed = True
                continue
            if isinstance(cid, str) and cid in new_snaps:
                ev["snapshot"] = new_snaps[cid]
                changed = True
                lines.append(json.dumps(ev, ensure_ascii=True, separators=(",", ":")).encode())
                continue
            lines.append(line.raw)
        if not changed:
            continue
        tmp = path.with_name(path.name + ".gc.tmp")
        with tmp.open("wb") as f:
            f.write(b"".join(line + b"\n" for line in lines))
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)


def _sweep_blobs(eng: Engine) -> int:
    live: set[str] = set()
    for cid in eng._order:
        snap = eng._snapshots.get(cid)
        if snap is not None:
            live.add(snap)
            live.update(e.hash for e in eng._snapshot(snap).values() if e.hash)
        delta = eng._deltas.get(cid)
        if delta:
            live.update(e.hash for e in delta.values() if e is not None and e.hash)
    live.update(e.hash for e in eng._head.values() if e.hash)
    dead = [b for b in eng._blobs.ids() if b not in live]
    for b in dead:
        eng._blobs.remove(b)
    eng._blobs.compact_packs()
    eng._blobs.remove_stray_tmp()
    if dead and eng._capture is not None:
        eng._capture.cache.drop_hashes(set(dead))
    return len(dead)
