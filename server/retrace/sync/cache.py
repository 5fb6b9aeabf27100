"""The local cache policy of a store with a remote: drop local copies the remote keeps safely.

When the store's blobs take more than ``localCacheBytes`` on disk, every local blob (loose, or
packed: a pack is rewritten without it, and goes when empty) is dropped that is

* in a pack of the remote that is listed and not condemned (confirmed now, by one LIST), and
* referenced by the part of a journal already pushed (so the remote GC keeps it: it is live), and
* not referenced by the head, by any checkpoint newer than ``localCacheHours`` (the recent past
  restores without the network), nor a manifest snapshot (every open reads those).

A dropped blob stays readable: the engine's blob source (the remote's cached pack indexes,
attached before anything is dropped) fetches it on first use. Runs with the engine open (the
writer lock held, or inside the server after a push through its gate) so no other writer's
in-memory view of the blobs goes stale. Remote retention still applies: a session idle past
``retentionDays`` expires remotely, and with it the only copy of blobs dropped here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from retrace.engine import Engine
from retrace.engine.errors import RetraceError, StoreLocked
from retrace.engine.store.blobs import BlobSource
from retrace.engine.store.layout import StoreLayout
from retrace.relay import holder
from retrace.sync.crypto import Cipher
from retrace.sync.gc import IndexLoader, cached_index_loader, condemned_packs
from retrace.sync.keys import PACKS, parse_pack
from retrace.sync.models import RemoteConfig, RemoteGcReport
from retrace.sync.objects import Bucket
from retrace.sync.packs import parse_index
from retrace.sync.state import SyncPaths

_HEX64 = re.compile(rb"[0-9a-f]{64}")
_SNAPSHOT = re.compile(rb'"snapshot"\s*:\s*"([0-9a-f]{64})"')


@dataclass(frozen=True)
class CacheResult:
    dropped: int = 0
    bytes_freed: int = 0


def confirmed_remote_ids(bucket: Bucket, load_index: IndexLoader, paths: SyncPaths) -> set[str]:
    """Blob ids in packs the remote lists now (pack and index) and has not condemned. Cached
    indexes of packs the remote no longer has (deleted by a remote GC) are forgotten."""
    listed: dict[str, set[str]] = {}
    for info in bucket.list(PACKS):
        parsed = parse_pack(info.key)
        if parsed is not None:
            listed.setdefault(parsed[0], set()).add(parsed[1])
    condemned = condemned_packs(bucket)
    for stale in paths.cached_indexes() - set(listed):
        (paths.index / f"{stale}.idx").unlink(missing_ok=True)
    out: set[str] = set()
    for name, parts in listed.items():
        if parts == {"pack", "idx"} and name not in condemned:
            out.update(parse_index(load_index(name)))
    return out


def pushed_references(layout: StoreLayout, paths: SyncPaths, engine: Engine) -> set[str]:
    """Blob ids the pushed part of every journal references (snapshots read locally)."""
    state = paths.load_state()
    refs: set[str] = set()
    snapshots: set[str] = set()
    for sid, js in state.journals.items():
        try:
            with layout.journal(sid).open("rb") as f:
                data = f.read(js.offset)
        except OSError:
            continue
        refs.update(m.decode() for m in _HEX64.findall(data))
        snapshots.update(m.decode() for m in _SNAPSHOT.findall(data))
    for snap in snapshots:
        try:
            refs.update(m.decode() for m in _HEX64.findall(engine.blobs.get(snap)))
        except (RetraceError, OSError, ValueError):  # unreadable: only fewer candidates
            continue
    return refs


def recent_references(engine: Engine, hours: float, now: float) -> set[str]:
    """Blob ids the head, every checkpoint newer than ``hours`` and every snapshot reference."""
    history = engine.history
    keep = {e.hash for e in engine.head_manifest.values() if e.hash}
    keep.update(history.snapshots.values())
    cutoff = now - hours * 3600.0
    for cid in history.order:
        cp = history.cps[cid]
        if cp.created_at.timestamp() >= cutoff and cid not in history.damage:
            keep.update(e.hash for e in engine.manifest(cid).values() if e.hash)
    return keep


def drop_cached(
    engine: Engine,
    source: BlobSource,
    *,
    confirmed: set[str],
    pushed: set[str],
    cache_hours: float,
    cache_bytes: int | None,
    now: float | None = None,
) -> CacheResult:
    """Apply the policy (see the module docstring) to an open engine's store."""
    blobs = engine.blobs
    if cache_bytes is None:
        return CacheResult()
    _count, disk_before, _raw = blobs.usage()
    if disk_before <= cache_bytes:
        return CacheResult()
    keep = recent_references(engine, cache_hours, time.time() if now is None else now)
    candidates = sorted((set(blobs.local_ids()) & confirmed & pushed) - keep)
    if not candidates:
        return CacheResult()
    blobs.attach_source(source)  # first: a dropped blob is readable from the remote at once
    for bid in candidates:
        blobs.remove(bid)
    blobs.compact_packs()
    _count, disk_after, _raw = blobs.usage()
    return CacheResult(len(candidates), max(0, disk_before - disk_after))


def local_gc(
    layout: StoreLayout,
    workspace: Path,
    config: RemoteConfig,
    bucket: Bucket,
    *,
    cipher: Cipher | None,
    source: Callable[[], BlobSource],
) -> RemoteGcReport:
    """``remote gc --local``: the policy over the store, the engine opened here (the writer lock:
    a running server applies it itself after its pushes)."""
    paths = SyncPaths(layout, config.name)
    confirmed = confirmed_remote_ids(bucket, cached_index_loader(bucket, cipher, paths), paths)
    src = source()  # after the index cache is complete: it maps every confirmed blob
    opened = holder.open_releasing(  # a headless holder lets go; an editor's server never does
        lambda: Engine.open(workspace, layout.root, create=False, catch_up=False, blob_source=src),
        layout.root,
        StoreLocked,
    )
    with opened as engine:
        result = drop_cached(
            engine,
            src,
            confirmed=confirmed,
            pushed=pushed_references(layout, paths, engine),
            cache_hours=config.local_cache_hours,
            cache_bytes=config.local_cache_bytes,
        )
    return RemoteGcReport(
        remote=config.name,
        dry_run=False,
        sessions_expired=0,
        packs_condemned=0,
        packs_deleted=0,
        bytes_freed=0,
        local_blobs_dropped=result.dropped,
        local_bytes_freed=result.bytes_freed,
    )
