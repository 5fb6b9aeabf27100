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
* Nothing from the bucket is trusted (:func:`import_journal`): sizes are checked from the LIST
  before any GET (:mod:`retrace.sync.limits`), each segment's seal and byte range on read, every
  path its checkpoints name (:mod:`retrace.sync.journal_check`); the journal streams into a
  temporary file, renamed into ``sessions/`` only when all hold. A session that fails is refused
  (open) or left as it was (pull, an ancestor), named in the report's ``skipped``.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from retrace.engine.store.atomic import write_atomic
from retrace.sync.crypto import Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.identity import check_card
from retrace.sync.journal_check import JournalScan
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
from retrace.sync.limits import CARD_BYTES, INDEX_BYTES, JOURNAL_BYTES, PACK_BYTES, SEGMENT_BYTES
from retrace.sync.models import OpenReport, PullReport, RemoteConfig, RemoteSession
from retrace.sync.objects import Bucket
from retrace.sync.packs import check_index, object_overhead, open_entry, open_index, open_segment, parse_index
from retrace.sync.state import Imported, SyncPaths

BucketFactory = Callable[[], Bucket]


@dataclass(frozen=True)
class RemoteJournal:
    session_id: str
    store_id: str
    gen: int
    segments: list[SegmentKey]
    sizes: dict[str, int] = field(default_factory=dict)
    """Object key → its size as the LIST reported it."""

    @property
    def size(self) -> int:
        return self.segments[-1].end if self.segments else 0


def remote_journals(bucket: Bucket, session_id: str | None = None) -> list[RemoteJournal]:
    """Every (session, store) journal in the bucket at its best generation (one LIST)."""
    listed = bucket.list(session_prefix(session_id) if session_id else SESSIONS)
    by_journal: dict[tuple[str, str], list[SegmentKey]] = {}
    sizes: dict[str, int] = {}
    for o in listed:
        seg = parse_segment(o.key)
        if seg is not None:
            by_journal.setdefault((seg.session_id, seg.store_id), []).append(seg)
            sizes[o.key] = o.size
    out: list[RemoteJournal] = []
    for (sid, store), segs in sorted(by_journal.items()):
        best = best_generation(segs)
        if best is not None:
            out.append(RemoteJournal(sid, store, best[0], best[1], {s.key: sizes[s.key] for s in best[1]}))
    return out


CARD_FIELDS = ("storeId", "machine", "workspaceName", "workspacePath", "created", "folder")
CARD_TEXT = 256
"""A card's fields are shown in listings: printable text only, at most this many characters."""


def clean_card(raw: object) -> dict[str, str]:
    """The known fields of a card as printable strings (a foreign card may hold anything: another
    JSON type, control characters that would rewrite a terminal line, megabytes of text)."""
    fields = raw if isinstance(raw, dict) else {}
    out: dict[str, str] = {}
    for name in CARD_FIELDS:
        value = fields.get(name)
        if isinstance(value, str):
            out[name] = "".join(c for c in value if c.isprintable())[:CARD_TEXT]
    return out


def store_card(
    bucket: Bucket, paths: SyncPaths, store_id: str, cipher: Cipher | None = None, *, fresh: bool = False
) -> dict[str, str]:
    """The card of a store (machine, workspace), cached locally; ``{}`` when unreadable.
    ``fresh``: read from the bucket even when cached (a store may have been told its folder since)."""
    cached = paths.cards / f"{store_id}.json"
    try:
        if not fresh:
            return clean_card(json.loads(cached.read_text(encoding="utf-8")))
    except (FileNotFoundError, ValueError):
        pass
    try:
        key = card_key(store_id)
        raw = bucket.get(key, limit=CARD_BYTES, kind="store card")
        card = clean_card(json.loads(open_segment(raw, key, cipher)))
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


def check_listed(journal: RemoteJournal, segments: list[SegmentKey], cipher: Cipher | None) -> None:
    """Refuse, before any download, a journal or segment bigger than its limit, and a segment
    whose listed size is not what its name's byte range makes of a sealed (or 0.1.0) object."""
    total = segments[-1].end if segments else 0  # byte ranges are offsets in the journal
    if total > JOURNAL_BYTES:
        raise RemoteError(
            f"remote session {journal.session_id} from store {journal.store_id} is {total} bytes, "
            f"more than the {JOURNAL_BYTES} a journal may hold: not opened"
        )
    for seg in segments:
        n = seg.end - seg.start
        if n > SEGMENT_BYTES:
            raise RemoteError(
                f"remote segment {seg.key} holds {n} bytes, more than the {SEGMENT_BYTES} a segment "
                "may hold: not read"
            )
        listed = journal.sizes.get(seg.key)
        allowed = {n + object_overhead(cipher)} if cipher is not None else {n, n + object_overhead(None)}
        if listed is not None and listed not in allowed:
            raise RemoteError(
                f"remote segment {seg.key} is {listed} bytes in the bucket, its name says {n} bytes of "
                "journal: not read (a foreign or damaged object)"
            )


def read_segment(bucket: Bucket, seg: SegmentKey, cipher: Cipher | None) -> bytes:
    """One segment's journal bytes, its seal checked (never more than its name says is read)."""
    n = seg.end - seg.start
    raw = bucket.get(seg.key, limit=n + object_overhead(cipher), kind="segment")
    body = open_segment(raw, seg.key, cipher)
    if len(body) != n or not body.endswith(b"\n"):
        raise RemoteError(
            f"remote segment {seg.key} holds {len(body)} bytes, its name says {n} (whole lines): not read"
        )
    return body


def download(
    bucket: Bucket, segments: list[SegmentKey], cipher: Cipher | None, out: BinaryIO, scan: JournalScan
) -> int:
    """Stream ``segments`` (checked, in order) into ``out``, feeding ``scan``; at most one
    segment per upload slot is in memory at a time. Returns the bytes written."""
    written = 0
    step = max(1, bucket.max_concurrency)
    for i in range(0, len(segments), step):
        for part in bucket.map_bounded(lambda s: read_segment(bucket, s, cipher), segments[i : i + step]):
            scan.feed(part)
            out.write(part)
            written += len(part)
    return written


def import_journal(
    bucket: Bucket,
    paths: SyncPaths,
    cipher: Cipher | None,
    journal: RemoteJournal,
    segments: list[SegmentKey],
    *,
    keep_prefix: bool = False,
) -> tuple[int, JournalScan]:
    """Write the journal of ``journal.session_id`` from ``segments`` (after the local journal's
    bytes when ``keep_prefix``): checked first (sizes, seals, every path), streamed into a
    temporary file beside the remote state, then renamed into place — on any refusal nothing
    of it reaches the store. Returns (bytes of the journal now, what its new bytes say)."""
    check_listed(journal, segments, cipher)
    dest = paths.layout.journal(journal.session_id)
    paths.dir.mkdir(parents=True, exist_ok=True)
    tmp = paths.dir / f".import-{journal.session_id}-{secrets.token_hex(4)}.tmp"
    scan = JournalScan()
    try:
        with tmp.open("wb") as out:
            if keep_prefix:
                with dest.open("rb") as f:
                    shutil.copyfileobj(f, out)
            download(bucket, segments, cipher, out, scan)
            size = out.tell()
            if scan.unsafe:
                raise RemoteError(
                    f"remote session {journal.session_id} from store {journal.store_id} names paths "
                    f"outside the workspace: {scan.unsafe_summary()}: not opened"
                )
            out.flush()
            os.fsync(out.fileno())
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return size, scan


def cache_indexes(bucket: Bucket, paths: SyncPaths, cipher: Cipher | None) -> list[str]:
    """Fetch the pack indexes not cached yet, each checked (size, form, entries inside its
    pack); returns one line per index refused (it is not cached, so its blobs stay unknown)."""
    sizes: dict[tuple[str, str], int] = {}
    for o in bucket.list(PACKS):
        if (p := parse_pack(o.key)) is not None:
            sizes[p] = o.size
    names = {name for name, ext in sizes if ext == "idx"}
    missing = sorted(names - paths.cached_indexes())

    def one(name: str) -> str | None:
        try:
            data = bucket.get(index_key(name), limit=INDEX_BYTES, kind="pack index")
            plain = open_index(data, name, cipher)
            check_index(plain, name, sizes.get((name, "pack")))
        except RemoteError as exc:
            return str(exc)
        paths.write_index(name, plain)
        return None

    return [e for e in bucket.map_bounded(one, missing) if e is not None]


def check_identity(
    bucket: Bucket,
    paths: SyncPaths,
    cipher: Cipher | None,
    config: RemoteConfig | None,
    journal: RemoteJournal,
) -> None:
    """Refuse a session another workspace name or folder pushed (:func:`retrace.sync.identity.check_card`)."""
    if config is None:
        return
    card = store_card(bucket, paths, journal.store_id, cipher, fresh=True)
    check_card(card, config.workspace_name, config.folder, journal.session_id, journal.store_id)


def open_session(
    bucket: Bucket,
    paths: SyncPaths,
    cipher: Cipher | None,
    session_id: str,
    store_id: str | None,
    *,
    config: RemoteConfig | None = None,
) -> OpenReport:
    if not valid_id(session_id):
        raise RemoteError(f"invalid session id {session_id!r}")
    if store_id is not None and not valid_id(store_id):
        raise RemoteError(f"invalid store id {store_id!r}")
    journals = [j for j in remote_journals(bucket, session_id) if store_id in (None, j.store_id)]
    if not journals:
        where = f" from store {store_id}" if store_id else ""
        raise RemoteError(
            f"no session {session_id!r}{where} in remote {bucket.name!r} (retrace remote sessions)"
        )
    journal = max(journals, key=lambda j: max(s.unix_ms for s in j.segments))
    check_identity(bucket, paths, cipher, config, journal)
    layout = paths.layout
    imported = paths.load_imported()
    path = layout.journal(session_id)
    prior = imported.get(session_id)
    if path.exists() and (prior is None or prior.store_id != journal.store_id):
        raise RemoteError(
            f"session {session_id} already exists in this store and was not opened from remote store "
            f"{journal.store_id}: not replaced"
        )
    size, scan = import_journal(bucket, paths, cipher, journal, journal.segments)
    imported[session_id] = Imported(
        session_id=session_id, store_id=journal.store_id, gen=journal.gen, bytes=size
    )
    paths.save_imported(imported)
    skipped = _import_ancestors(bucket, paths, cipher, journal, scan)
    skipped += cache_indexes(bucket, paths, cipher)
    return OpenReport(
        session_id=session_id,
        store_id=journal.store_id,
        checkpoints=scan.checkpoints,
        bytes=size,
        skipped=skipped,
    )


def checkpoint_links(data: bytes) -> tuple[set[str], set[str]]:
    """(checkpoint ids, their parent ids) of a journal's checkpoint lines."""
    scan = JournalScan()
    scan.feed(data)
    return scan.ids, scan.parents


def _import_ancestors(
    bucket: Bucket, paths: SyncPaths, cipher: Cipher | None, journal: RemoteJournal, scan: JournalScan
) -> list[str]:
    """Import the sessions of the same remote store that hold the parents of the opened
    session's checkpoints (a session starts from the previous one's head), newest first, until
    every parent is present. Local sessions are never replaced; a session that fails its checks
    is left out (one line each, returned) and the search goes on."""
    known, parents = set(scan.ids), set(scan.parents)
    local = paths.layout.session_ids()
    for sid in local:
        ids, _ = checkpoint_links(paths.layout.journal(sid).read_bytes())
        known |= ids
    if parents <= known:
        return []
    imported = paths.load_imported()
    others = [
        j for j in remote_journals(bucket)
        if j.store_id == journal.store_id and j.session_id != journal.session_id and j.session_id not in local
    ]  # fmt: skip
    others.sort(key=lambda j: min(s.unix_ms for s in j.segments), reverse=True)
    skipped: list[str] = []
    for other in others:
        if parents <= known:
            break
        try:
            size, found = import_journal(bucket, paths, cipher, other, other.segments)
        except RemoteError as exc:
            skipped.append(str(exc))
            continue
        imported[other.session_id] = Imported(
            session_id=other.session_id, store_id=other.store_id, gen=other.gen, bytes=size
        )
        paths.save_imported(imported)
        known |= found.ids
        parents |= found.parents
    return skipped


def count_checkpoints(data: bytes) -> int:
    return sum(1 for line in data.splitlines() if b'"type":"checkpoint"' in line.replace(b" ", b""))


def pull(
    bucket: Bucket, paths: SyncPaths, cipher: Cipher | None, config: RemoteConfig | None = None
) -> PullReport:
    imported = paths.load_imported()
    sessions = segments = nbytes = 0
    skipped: list[str] = []
    journals = {(j.session_id, j.store_id): j for j in remote_journals(bucket)} if imported else {}
    for sid, imp in sorted(imported.items()):
        j = journals.get((sid, imp.store_id))
        path = paths.layout.journal(sid)
        if j is None or not path.exists() or path.stat().st_size != imp.bytes:
            continue  # gone from the remote, or continued here since: left alone
        new = j.segments
        if j.gen == imp.gen:
            new = [s for s in j.segments if s.start >= imp.bytes]
            if not new or new[0].start != imp.bytes:
                continue
        try:
            check_identity(bucket, paths, cipher, config, j)
            size, _scan = import_journal(bucket, paths, cipher, j, new, keep_prefix=j.gen == imp.gen)
        except RemoteError as exc:
            skipped.append(str(exc))  # this session stays as it was; the others go on
            continue
        imported[sid] = Imported(session_id=sid, store_id=imp.store_id, gen=j.gen, bytes=size)
        paths.save_imported(imported)
        sessions += 1
        segments += len(new)
        nbytes += sum(s.end - s.start for s in new)
    if imported:
        skipped += cache_indexes(bucket, paths, cipher)
    return PullReport(remote=bucket.name, sessions=sessions, segments=segments, bytes=nbytes, skipped=skipped)


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
        if ln > PACK_BYTES:
            raise RemoteError(f"remote pack {name} has an entry of {ln} bytes in its index: not read")
        bucket = self._get_bucket()
        key = pack_key(name)
        if bucket.ranges and self._pack_size.get(name, 0) > WHOLE_PACK_BYTES:
            with self._lock:
                whole = self._cached(name)
            if whole is None:
                data = bucket.get_range(key, off, off + ln, limit=PACK_BYTES)  # may find no Range
                if bucket.ranges:
                    return data
        with self._pack_lock(name):  # one GET per pack however many threads want it
            with self._lock:
                whole = self._cached(name)
            if whole is None:
                whole = bucket.get(key, limit=PACK_BYTES, kind="pack")
                if hashlib.sha256(whole).hexdigest() != name:
                    raise RemoteError(f"remote pack {key} does not match its name (damaged or replaced)")
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
