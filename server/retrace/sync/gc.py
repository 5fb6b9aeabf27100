"""Remote garbage collection: mark and sweep with a grace period, safe with concurrent writers.

Any machine can run it; it takes no lock and needs no server of its own. Contracts:

* **Sessions first.** A stream (one session as pushed by one store) whose newest segment is older
  than the retention expires: all its segments are deleted. Older generations of a stream are
  deleted once a newer generation is complete (contiguous from byte 0) and its first segment is
  older than the grace period (its initial full copy has finished).
* **Mark.** The live set is every blob referenced by every segment that stays (every generation,
  not only the best: a reader may still be reading an older one). A segment is read as bytes:
  every 64-hex string in it counts as referenced (an over-approximation that never misses a
  reference, whatever the event type), and every snapshot it names is fetched and read the same
  way. A snapshot that cannot be read stops the collection before anything is swept.
* **Sweep, two phases.** A pack none of whose blobs is live and that is older than the grace period
  gets a condemned mark (``gc/condemned/<pack>.json``). A pack condemned at least the grace period
  ago and still not live is deleted — index first, then pack, then its mark — so a half-done
  deletion never leaves an index naming blobs that are gone. A condemned pack that became live
  again (a writer referenced it before it saw the mark), or whose object is newer than its mark
  (a pusher uploaded the same pack again), loses its mark. Pushers treat condemned
  packs as absent (:func:`condemned_packs`) and upload the blobs again, so a writer can only lose
  a blob if one push takes longer than the grace period.
* **Clock.** Ages compare object ``LastModified`` times with the bucket's own clock (read from an
  object this collection writes), so a machine whose clock is off cannot condemn early.

The decisions are pure (:func:`plan_sessions`, :func:`plan_sweep`) and table-tested; the rest is
I/O around them. The local cache policy is :mod:`retrace.sync.cache`.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from retrace.sync.crypto import OVERHEAD, Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.files import write_json
from retrace.sync.keys import (
    CONDEMNED,
    PACKS,
    SESSIONS,
    SegmentKey,
    best_generation,
    condemned_key,
    index_key,
    pack_key,
    parse_condemned,
    parse_pack,
    parse_segment,
)
from retrace.sync.limits import INDEX_BYTES, SEGMENT_BYTES, SNAPSHOT_BYTES
from retrace.sync.models import RemoteConfig, RemoteGcReport
from retrace.sync.objects import Bucket, ObjectInfo
from retrace.sync.packs import Location, object_overhead, open_entry, open_index, open_segment, parse_index
from retrace.sync.state import SyncPaths

log = logging.getLogger(__name__)

GRACE_HOURS = 24.0
SEAL_OVERHEAD = max(object_overhead(None), OVERHEAD)
CLOCK_KEY = "gc/clock.json"
_HEX64 = re.compile(rb"[0-9a-f]{64}")
_SNAPSHOT = re.compile(rb'"snapshot"\s*:\s*"([0-9a-f]{64})"')

# --------------------------------------------------------------------------- pure decisions


@dataclass(frozen=True)
class PackState:
    """One pack as listed: its blob ids (``None``: no readable index), the LastModified of its
    pack object (of its index when the pack object is gone), in seconds, and its bytes."""

    name: str
    blobs: frozenset[str] | None
    modified: float
    size: int
    has_pack: bool = True


@dataclass(frozen=True)
class SweepPlan:
    condemn: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    release: tuple[str, ...] = ()
    """Marks to remove: the pack is live again, was uploaded again after its mark, or is gone."""
    bytes_freed: int = 0


def plan_sweep(
    packs_: Iterable[PackState],
    marks: Mapping[str, float],
    live: Set[str],
    *,
    now: float,
    grace: float,
) -> SweepPlan:
    """What to condemn, delete and release. ``marks``: pack name → time it was condemned."""
    condemn: list[str] = []
    delete: list[str] = []
    release: list[str] = []
    freed = 0
    seen: set[str] = set()
    for p in sorted(packs_, key=lambda p: p.name):
        seen.add(p.name)
        usable = p.has_pack and p.blobs is not None
        dead = not usable or not (p.blobs or frozenset()) & live
        marked = marks.get(p.name)
        if not dead or (marked is not None and p.modified > marked):
            # Live again, or uploaded again after the mark (a pusher that saw the mark built the
            # same pack: its segment may be on its way): the mark goes, the clock restarts.
            if marked is not None:
                release.append(p.name)
        elif marked is None:
            if p.modified <= now - grace:
                condemn.append(p.name)
        elif marked <= now - grace:
            delete.append(p.name)
            freed += p.size
    release.extend(sorted(name for name in marks if name not in seen))
    return SweepPlan(tuple(condemn), tuple(delete), tuple(release), freed)


@dataclass(frozen=True)
class SegmentState:
    key: SegmentKey
    modified: float
    size: int


@dataclass(frozen=True)
class SessionPlan:
    keep: tuple[SegmentState, ...] = ()
    delete: tuple[SegmentState, ...] = ()
    expired: tuple[tuple[str, str], ...] = ()
    """(session id, store id) of the streams that expired."""


def plan_sessions(
    segments: Iterable[SegmentState], *, now: float, grace: float, retention: float
) -> SessionPlan:
    """Which segments stay (their blobs are live) and which go (expired streams, old
    generations). Times in seconds."""
    streams: dict[tuple[str, str], list[SegmentState]] = {}
    for s in segments:
        streams.setdefault((s.key.session_id, s.key.store_id), []).append(s)
    keep: list[SegmentState] = []
    delete: list[SegmentState] = []
    expired: list[tuple[str, str]] = []
    for stream, segs in sorted(streams.items()):
        if max(s.modified for s in segs) <= now - retention:
            expired.append(stream)
            delete.extend(segs)
            continue
        old = _superseded(segs, now=now, grace=grace)
        delete.extend(s for s in segs if s.key.gen in old)
        keep.extend(s for s in segs if s.key.gen not in old)
    return SessionPlan(tuple(keep), tuple(delete), tuple(expired))


def _superseded(segs: list[SegmentState], *, now: float, grace: float) -> set[int]:
    """Generations older than the best one, once the best one's first segment is past grace."""
    best = best_generation([s.key for s in segs])
    if best is None:
        return set()
    gen, chain = best
    first = next(s for s in segs if s.key == chain[0])
    if first.modified > now - grace:
        return set()
    return {s.key.gen for s in segs if s.key.gen < gen}


# --------------------------------------------------------------------------- I/O


def condemned_packs(bucket: Bucket) -> set[str]:
    """Names of the packs under a condemned mark: a pusher must not count their blobs as present
    in the remote (it uploads them again), and a reader should prefer another copy."""
    return {name for m in bucket.list(CONDEMNED) if (name := parse_condemned(m.key))}


def server_now(bucket: Bucket) -> float:
    """The bucket's clock: the LastModified of an object written just now (as LIST reports it,
    with the same precision as the listings it is compared with; HEAD's is whole seconds)."""
    bucket.put(CLOCK_KEY, json.dumps({"by": socket.gethostname(), "at": time.time()}).encode())
    listed = [o for o in bucket.list(CLOCK_KEY) if o.key == CLOCK_KEY]
    return listed[0].modified.timestamp() if listed else time.time()


@dataclass
class GcResult:
    sessions_expired: int = 0
    segments_deleted: int = 0
    packs_condemned: int = 0
    packs_deleted: int = 0
    marks_released: int = 0
    bytes_freed: int = 0
    live_blobs: int = 0
    packs: int = 0
    segments: int = 0
    requests: dict[str, int] = field(default_factory=dict)


class RefCache:
    """What each immutable segment and snapshot references, kept between collections in a local
    file (a segment's key names its bytes and a snapshot is content-addressed, so an entry never
    goes stale); a warm collection downloads only new segments. Entries not used by a collection
    are dropped when it saves."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[list[str]]] = {}
        self.used: set[str] = set()
        if path is not None:
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(raw, dict):
                    self.entries = raw
            except (OSError, ValueError):
                self.entries = {}

    def get(self, key: str) -> tuple[set[str], set[str]] | None:
        entry = self.entries.get(key)
        if not isinstance(entry, list) or len(entry) != 2:
            return None
        self.used.add(key)
        return set(entry[0]), set(entry[1])

    def put(self, key: str, refs: set[str], snapshots: set[str]) -> None:
        self.entries[key] = [sorted(refs), sorted(snapshots)]
        self.used.add(key)

    def save(self) -> None:
        if self.path is None:
            return
        kept = {k: v for k, v in self.entries.items() if k in self.used}
        write_json(self.path, kept, compact=True)


IndexLoader = Callable[[str], bytes]
"""Pack name → its clear index (the caller may serve it from a local cache: packs are immutable)."""


def collect(
    bucket: Bucket,
    cipher: Cipher | None,
    *,
    grace_hours: float = GRACE_HOURS,
    retention_days: float = 30.0,
    dry_run: bool = False,
    load_index: IndexLoader | None = None,
    refs: RefCache | None = None,
) -> GcResult:
    """One collection over the bucket's workspace prefix (see the module contracts)."""
    before = dict(bucket.requests)
    grace = grace_hours * 3600.0
    now = time.time() if dry_run else server_now(bucket)
    result = GcResult()
    segments = _list_segments(bucket)
    result.segments = len(segments)
    plan = plan_sessions(segments, now=now, grace=grace, retention=retention_days * 86400.0)
    result.sessions_expired = len(plan.expired)
    result.segments_deleted = len(plan.delete)
    result.bytes_freed += sum(s.size for s in plan.delete)
    if not dry_run:
        bucket.map_bounded(bucket.delete, [s.key.key for s in plan.delete])
    listing = bucket.list(PACKS)
    marks = _marks(bucket)
    loader = load_index or _index_loader(bucket, cipher)
    states, where = _pack_states(listing, loader)
    result.packs = len(states)
    cache = refs or RefCache(None)
    live = _live_blobs(bucket, cipher, plan.keep, where, cache)
    cache.save()
    result.live_blobs = len(live)
    sweep = plan_sweep(states, marks, live, now=now, grace=grace)
    result.packs_condemned = len(sweep.condemn)
    result.packs_deleted = len(sweep.delete)
    result.marks_released = len(sweep.release)
    result.bytes_freed += sweep.bytes_freed
    if not dry_run:
        _apply_sweep(bucket, sweep, now)
    result.requests = {k: v - before.get(k, 0) for k, v in bucket.requests.items()}
    return result


def remote_gc(
    bucket: Bucket,
    cipher: Cipher | None,
    config: RemoteConfig,
    paths: SyncPaths,
    *,
    dry_run: bool = False,
    grace_hours: float | None = None,
    retention_days: float | None = None,
) -> RemoteGcReport:
    """:func:`collect` for a configured remote, its pack indexes read through the local index
    cache (packs are immutable: each index is fetched once per machine)."""
    result = collect(
        bucket,
        cipher,
        grace_hours=GRACE_HOURS if grace_hours is None else grace_hours,
        retention_days=config.retention_days if retention_days is None else retention_days,
        dry_run=dry_run,
        load_index=cached_index_loader(bucket, cipher, paths),
        refs=RefCache(paths.dir / "gc-refs.json"),
    )
    return RemoteGcReport(
        remote=config.name,
        dry_run=dry_run,
        sessions_expired=result.sessions_expired,
        packs_condemned=result.packs_condemned,
        packs_deleted=result.packs_deleted,
        bytes_freed=result.bytes_freed,
        local_blobs_dropped=0,
        local_bytes_freed=0,
    )


def cached_index_loader(bucket: Bucket, cipher: Cipher | None, paths: SyncPaths) -> IndexLoader:
    cached = paths.cached_indexes()

    def load(name: str) -> bytes:
        if name in cached:
            try:
                return (paths.index / f"{name}.idx").read_bytes()
            except OSError:
                pass
        plain = open_index(bucket.get(index_key(name), limit=INDEX_BYTES, kind="pack index"), name, cipher)
        paths.write_index(name, plain)
        return plain

    return load


def _list_segments(bucket: Bucket) -> list[SegmentState]:
    out: list[SegmentState] = []
    for info in bucket.list(SESSIONS):
        seg = parse_segment(info.key)
        if seg is not None:
            out.append(SegmentState(seg, info.modified.timestamp(), info.size))
    return out


def _marks(bucket: Bucket) -> dict[str, float]:
    out: dict[str, float] = {}
    for info in bucket.list(CONDEMNED):
        name = parse_condemned(info.key)
        if name is not None:
            out[name] = info.modified.timestamp()
    return out


def _index_loader(bucket: Bucket, cipher: Cipher | None) -> IndexLoader:
    def load(name: str) -> bytes:
        return open_index(bucket.get(index_key(name), limit=INDEX_BYTES, kind="pack index"), name, cipher)

    return load


Located = dict[str, tuple[str, Location]]
"""Blob id → (pack name, location in the pack object)."""


def _pack_states(listing: list[ObjectInfo], load: IndexLoader) -> tuple[list[PackState], Located]:
    objects: dict[str, dict[str, ObjectInfo]] = {}
    for info in listing:
        parsed = parse_pack(info.key)
        if parsed is not None:
            objects.setdefault(parsed[0], {})[parsed[1]] = info
    states: list[PackState] = []
    where: Located = {}
    for name, parts in sorted(objects.items()):
        blobs: frozenset[str] | None = None
        if "idx" in parts:
            try:
                index = parse_index(load(name))
            except RemoteError as exc:
                if "does not exist" not in str(exc):
                    raise
            else:
                blobs = frozenset(index)
                if "pack" in parts:
                    where.update((bid, (name, loc)) for bid, loc in index.items())
        main = parts.get("pack") or parts["idx"]
        size = sum(p.size for p in parts.values())
        states.append(PackState(name, blobs, main.modified.timestamp(), size, "pack" in parts))
    return states, where


def _live_blobs(
    bucket: Bucket, cipher: Cipher | None, segments: Iterable[SegmentState], where: Located, cache: RefCache
) -> set[str]:
    live: set[str] = set()
    snapshots: set[str] = set()

    def read(seg: SegmentState) -> tuple[set[str], set[str]]:
        key = seg.key.key
        cached = cache.get(f"seg:{key}")
        if cached is not None:
            return cached
        try:
            raw = bucket.get(key, limit=SEGMENT_BYTES + SEAL_OVERHEAD, kind="segment")
        except RemoteError as exc:
            if "does not exist" in str(exc):  # deleted meanwhile by another collection
                return set(), set()
            raise
        try:
            data = open_segment(raw, key, cipher)
        except RemoteError:
            if cipher is not None:
                raise  # unreadable without the key: nothing can be marked, nothing is swept
            data = raw  # damaged but readable: every 64-hex string still counts (never fewer)
        found = _referenced(data), {m.decode() for m in _SNAPSHOT.findall(data)}
        cache.put(f"seg:{key}", *found)
        return found

    def snapshot(sid: str) -> set[str]:
        cached = cache.get(f"snap:{sid}")
        if cached is not None:
            return cached[0]
        found = _snapshot_refs(bucket, cipher, sid, where)
        cache.put(f"snap:{sid}", found, set())
        return found

    for refs, snaps in bucket.map_bounded(read, list(segments)):
        live |= refs
        snapshots |= snaps
    for refs in bucket.map_bounded(snapshot, sorted(snapshots)):
        live |= refs
    return live


def _referenced(data: bytes) -> set[str]:
    return {m.decode() for m in _HEX64.findall(data)}


def _snapshot_refs(bucket: Bucket, cipher: Cipher | None, sid: str, where: Located) -> set[str]:
    found = where.get(sid)
    if found is None:
        raise RemoteError(f"remote gc stopped before sweeping: snapshot blob {sid} is not in the remote")
    name, (off, length, _raw) = found
    if length > SNAPSHOT_BYTES:
        raise RemoteError(
            f"remote gc stopped before sweeping: snapshot blob {sid} is {length} bytes in its pack"
        )
    payload = open_entry(bucket.get_range(pack_key(name), off, off + length), sid, cipher)
    try:
        data = zstandard.ZstdDecompressor().decompress(payload, max_output_size=SNAPSHOT_BYTES)
    except zstandard.ZstdError as exc:
        raise RemoteError(
            f"remote gc stopped before sweeping: snapshot blob {sid} is unreadable or over "
            f"{SNAPSHOT_BYTES} bytes ({exc})"
        ) from None
    return _referenced(data)


def _apply_sweep(bucket: Bucket, sweep: SweepPlan, now: float) -> None:
    mark = json.dumps({"condemnedAt": now, "by": socket.gethostname()}).encode()
    bucket.map_bounded(lambda name: bucket.put(condemned_key(name), mark), list(sweep.condemn))

    def remove(name: str) -> None:
        bucket.delete(index_key(name))
        bucket.delete(pack_key(name))
        bucket.delete(condemned_key(name))

    bucket.map_bounded(remove, list(sweep.delete))
    bucket.map_bounded(lambda name: bucket.delete(condemned_key(name)), list(sweep.release))
    if sweep.condemn or sweep.delete or sweep.release:
        log.info(
            "remote gc: %d condemned, %d deleted, %d released",
            len(sweep.condemn),
            len(sweep.delete),
            len(sweep.release),
        )
