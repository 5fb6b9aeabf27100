"""Reading the remote: the session listing, open (import a session), pull, and the lazy
:class:`RemoteBlobs` source.

Contracts:

* ``list_sessions`` costs one LIST of ``sessions/`` (segment keys carry session, store,
  generation, byte range and time) plus one GET per store card not cached yet.
* ``open_session`` writes ``<store>/sessions/<id>/journal.jsonl`` atomically from the best
  generation's segments (contiguous from byte 0), refusing to replace a local session that was
  not imported from that remote store; it then caches every remote pack index. Blobs are NOT
  downloaded: :class:`RemoteBlobs` fetches one entry (a range read) when the engine reads it.
* ``pull`` appends to each imported session the bytes pushed since; a new generation re-imports
  the whole journal. A session that was continued locally after its import is left alone.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from retrace.sync.crypto import Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.files import write_atomic
from retrace.sync.keys import (
    PACKS,
    SESSIONS,
    SegmentKey,
    best_generation,
    card_key,
    index_key,
    pack_key,
    parse_pack,
    parse_segment,
    session_prefix,
    valid_id,
)
from retrace.sync.models import OpenReport, PullReport, RemoteSession
from retrace.sync.objects import Bucket
from retrace.sync.packs import open_entry, open_index, open_segment, parse_index
from retrace.sync.state import Imported, SyncPaths

BucketFactory = Callable[[], Bucket]


@dataclass(frozen=True)
class RemoteJournal:
    session_id: str
    store_id: str
    gen: int
    segments: list[SegmentKey]

    @property
    def size(self) -> int:
        return self.segments[-1].end if self.segments else 0


def remote_journals(bucket: Bucket, session_id: str | None = None) -> list[RemoteJournal]:
    """Every (session, store) journal in the bucket at its best generation (one LIST)."""
    listed = bucket.list(session_prefix(session_id) if session_id else SESSIONS)
    by_journal: dict[tuple[str, str], list[SegmentKey]] = {}
    for o in listed:
        seg = parse_segment(o.key)
        if seg is not None:
            by_journal.setdefault((seg.session_id, seg.store_id), []).append(seg)
    out: list[RemoteJournal] = []
    for (sid, store), segs in sorted(by_journal.items()):
        best = best_generation(segs)
        if best is not None:
            out.append(RemoteJournal(sid, store, best[0], best[1]))
    return out


def store_card(
    bucket: Bucket, paths: SyncPaths, store_id: str, cipher: Cipher | None = None
) -> dict[str, str]:
    """The card of a store (machine, workspace), cached locally; ``{}`` when unreadable."""
    cached = paths.cards / f"{store_id}.json"
    try:
        return dict(json.loads(cached.read_text(encoding="utf-8")))
    except (FileNotFoundError, ValueError):
        pass
    try:
        key = card_key(store_id)
        card = dict(json.loads(open_segment(bucket.get(key), key, cipher)))
    except (RemoteError, ValueError):
        return {}
    write_atomic(cached, json.dumps(card).encode())
    return card


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def list_sessions(bucket: Bucket, paths: SyncPaths, cipher: Cipher | None = None) -> list[RemoteSession]:
    imported = paths.load_imported()
    # A session this store holds (its own, pushed from here, or one opened) is here already.
    here = set(paths.layout.session_ids())
    out: list[RemoteSession] = []
    for j in remote_journals(bucket):
        card = store_card(bucket, paths, j.store_id, cipher)
        imp = imported.get(j.session_id)
        out.append(
            RemoteSession(
                session_id=j.session_id,
                store_id=j.store_id,
                machine=card.get("machine", ""),
                workspace_name=card.get("workspaceName", ""),
                workspace_path=card.get("workspacePath", ""),
                first_at=_iso(min(s.unix_ms for s in j.segments)),
                last_at=_iso(max(s.unix_ms for s in j.segments)),
                bytes=j.size,
                segments=len(j.segments),
                generation=j.gen,
                opened_locally=(imp is not None and imp.store_id == j.store_id) or j.session_id in here,
            )
        )
    out.sort(key=lambda s: s.last_at or "", reverse=True)
    return out


def download(bucket: Bucket, segments: list[SegmentKey], cipher: Cipher | None) -> bytes:
    parts = bucket.map_bounded(lambda s: open_segment(bucket.get(s.key), s.key, cipher), segments)
    for seg, part in zip(segments, parts, strict=True):
        if len(part) != seg.end - seg.start:
            raise RemoteError(
                f"remote segment {seg.key} holds {len(part)} bytes, its name says {seg.end - seg.start}"
            )
    return b"".join(parts)


def cache_indexes(bucket: Bucket, paths: SyncPaths, cipher: Cipher | None) -> int:
    """Fetch the pack indexes not cached yet; returns how many."""
    names = {p[0] for o in bucket.list(PACKS) if (p := parse_pack(o.key)) and p[1] == "idx"}
    missing = sorted(names - paths.cached_indexes())

    def one(name: str) -> None:
        paths.write_index(name, open_index(bucket.get(index_key(name)), name, cipher))

    bucket.map_bounded(one, missing)
    return len(missing)


def open_session(
    bucket: Bucket, paths: SyncPaths, cipher: Cipher | None, session_id: str, store_id: str | None
) -> OpenReport:
    if not valid_id(session_id):
        raise RemoteError(f"invalid session id {session_id!r}")
    journals = [j for j in remote_journals(bucket, session_id) if store_id in (None, j.store_id)]
    if not journals:
        where = f" from store {store_id}" if store_id else ""
        raise RemoteError(
            f"no session {session_id!r}{where} in remote {bucket.name!r} (retrace remote sessions)"
        )
    journal = max(journals, key=lambda j: max(s.unix_ms for s in j.segments))
    layout = paths.layout
    imported = paths.load_imported()
    path = layout.journal(session_id)
    prior = imported.get(session_id)
    if path.exists() and (prior is None or prior.store_id != journal.store_id):
        raise RemoteError(
            f"session {session_id} already exists in this store and was not opened from remote store "
            f"{journal.store_id}: not replaced"
        )
    data = download(bucket, journal.segments, cipher)
    write_atomic(path, data)
    imported[session_id] = Imported(
        session_id=session_id, store_id=journal.store_id, gen=journal.gen, bytes=len(data)
    )
    paths.save_imported(imported)
    _import_ancestors(bucket, paths, cipher, journal, data)
    cache_indexes(bucket, paths, cipher)
    return OpenReport(
        session_id=session_id, store_id=journal.store_id, checkpoints=count_checkpoints(data), bytes=len(data)
    )


def checkpoint_links(data: bytes) -> tuple[set[str], set[str]]:
    """(checkpoint ids, their parent ids) of a journal's checkpoint lines."""
    ids: set[str] = set()
    parents: set[str] = set()
    for line in data.splitlines():
        if b'"checkpoint"' not in line:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        cp = ev.get("checkpoint") if isinstance(ev, dict) and ev.get("type") == "checkpoint" else None
        if isinstance(cp, dict) and isinstance(cp.get("id"), str):
            ids.add(cp["id"])
            if isinstance(cp.get("parent"), str):
                parents.add(cp["parent"])
    return ids, parents


def _import_ancestors(
    bucket: Bucket, paths: SyncPaths, cipher: Cipher | None, journal: RemoteJournal, data: bytes
) -> None:
    """Import the sessions of the same remote store that hold the parents of the opened
    session's checkpoints (a session starts from the previous one's head), newest first, until
    every parent is present. Local sessions are never replaced."""
    known, parents = checkpoint_links(data)
    local = paths.layout.session_ids()
    for sid in local:
        ids, _ = checkpoint_links(paths.layout.journal(sid).read_bytes())
        known |= ids
    if parents <= known:
        return
    imported = paths.load_imported()
    others = [
        j for j in remote_journals(bucket)
        if j.store_id == journal.store_id and j.session_id != journal.session_id and j.session_id not in local
    ]  # fmt: skip
    others.sort(key=lambda j: min(s.unix_ms for s in j.segments), reverse=True)
    for other in others:
        if parents <= known:
            return
        body = download(bucket, other.segments, cipher)
        ids, more = checkpoint_links(body)
        write_atomic(paths.layout.journal(other.session_id), body)
        imported[other.session_id] = Imported(
            session_id=other.session_id, store_id=other.store_id, gen=other.gen, bytes=len(body)
        )
        paths.save_imported(imported)
        known |= ids
        parents |= more


def count_checkpoints(data: bytes) -> int:
    return sum(1 for line in data.splitlines() if b'"type":"checkpoint"' in line.replace(b" ", b""))


def pull(bucket: Bucket, paths: SyncPaths, cipher: Cipher | None) -> PullReport:
    imported = paths.load_imported()
    sessions = segments = nbytes = 0
    journals = {(j.session_id, j.store_id): j for j in remote_journals(bucket)} if imported else {}
    for sid, imp in sorted(imported.items()):
        j = journals.get((sid, imp.store_id))
        path = paths.layout.journal(sid)
        if j is None or not path.exists() or path.stat().st_size != imp.bytes:
            continue  # gone from the remote, or continued here since: left alone
        if j.gen == imp.gen:
            new = [s for s in j.segments if s.start >= imp.bytes]
            if not new or new[0].start != imp.bytes:
                continue
            data = path.read_bytes() + download(bucket, new, cipher)
        else:
            new = j.segments
            data = download(bucket, new, cipher)
        write_atomic(path, data)
        imported[sid] = Imported(session_id=sid, store_id=imp.store_id, gen=j.gen, bytes=len(data))
        paths.save_imported(imported)
        sessions += 1
        segments += len(new)
        nbytes += sum(s.end - s.start for s in new)
    if imported:
        cache_indexes(bucket, paths, cipher)
    return PullReport(remote=bucket.name, sessions=sessions, segments=segments, bytes=nbytes)


WHOLE_PACK_BYTES = 8 << 20
"""A pack up to this size is read whole on its first use (one GET serves the blobs a restore
needs from it); a bigger one is read one entry at a time (range GETs)."""
PACK_CACHE_BYTES = 64 << 20
NO_RANGE_CACHE_BYTES = 320 << 20
"""On a server that ignores ``Range`` every read is a whole pack: keep up to five big ones."""


class RemoteBlobs:
    """The engine's :class:`~retrace.engine.store.blobs.BlobSource` over the cached remote pack
    indexes. ``fetch`` reads a small pack whole once (kept in a bounded memory cache), one entry
    of a big pack with a range GET (the whole pack on servers that ignore ``Range``); a blob in
    several packs (two machines uploaded it) is tried in each. ``fetched`` counts entries."""

    def __init__(self, index_dir: Path, bucket_factory: BucketFactory, cipher: Cipher | None) -> None:
        self._where: dict[str, list[tuple[str, int, int]]] = {}
        self._pack_size: dict[str, int] = {}
        if index_dir.is_dir():
            for p in sorted(index_dir.glob("*.idx")):
                for bid, (off, ln, _size) in parse_index(p.read_bytes()).items():
                    self._where.setdefault(bid, []).append((p.stem, off, ln))
                    self._pack_size[p.stem] = max(self._pack_size.get(p.stem, 0), off + ln)
        self._factory = bucket_factory
        self._bucket: Bucket | None = None
        self._cipher = cipher
        self._lock = threading.Lock()
        self._packs: OrderedDict[str, bytes] = OrderedDict()
        self._pack_locks: dict[str, threading.Lock] = {}
        self._cached_bytes = 0
        self.fetched = 0

    def ids(self) -> set[str]:
        return set(self._where)

    def ranges_supported(self) -> bool:
        """False once the server ignored a Range request (whole packs are read then)."""
        return self._bucket is None or self._bucket.ranges

    def _get_bucket(self) -> Bucket:
        with self._lock:
            if self._bucket is None:
                self._bucket = self._factory()
            return self._bucket

    def fetch(self, bid: str) -> bytes:
        places = self._where.get(bid)
        if not places:
            raise RemoteError(f"blob {bid} is in no remote pack index")
        error: RemoteError | None = None
        for name, off, ln in places:
            try:
                data = self._read(name, off, ln)
            except RemoteError as exc:
                error = error or exc
                continue
            with self._lock:
                self.fetched += 1
            return open_entry(data, bid, self._cipher)
        assert error is not None
        raise error

    def _read(self, name: str, off: int, ln: int) -> bytes:
        bucket = self._get_bucket()
        key = pack_key(name)
        if bucket.ranges and self._pack_size.get(name, 0) > WHOLE_PACK_BYTES:
            with self._lock:
                whole = self._cached(name)
            if whole is None:
                data = bucket.get_range(key, off, off + ln)  # may find the server ignores Range
                if bucket.ranges:
                    return data
        with self._pack_lock(name):  # one GET per pack however many threads want it
            with self._lock:
                whole = self._cached(name)
            if whole is None:
                whole = bucket.get(key)
                self._keep(name, whole, PACK_CACHE_BYTES if bucket.ranges else NO_RANGE_CACHE_BYTES)
        return whole[off : off + ln]

    def _pack_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._pack_locks.setdefault(name, threading.Lock())

    def _cached(self, name: str) -> bytes | None:
        whole = self._packs.get(name)
        if whole is not None:
            self._packs.move_to_end(name)
        return whole

    def _keep(self, name: str, data: bytes, limit: int) -> None:
        with self._lock:
            if name in self._packs or len(data) > limit:
                return
            self._packs[name] = data
            self._cached_bytes += len(data)
            while self._cached_bytes > limit:
                _n, old = self._packs.popitem(last=False)
                self._cached_bytes -= len(old)
