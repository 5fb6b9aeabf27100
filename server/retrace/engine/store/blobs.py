"""Content-addressed blob store, zstd-compressed and deduplicated, shared by all sessions.

A blob id is the hex SHA-256 of the RAW bytes, so identical contents are stored once. Two
layouts, one namespace:

* loose blobs ``blobs/ab/<sha256>`` — one file per blob, for the few blobs of a checkpoint;
* packs ``blobs/packs/<name>.pack`` + ``<name>.idx`` — for bulk captures (the baseline, a big
  shell command): one append-only file instead of thousands of tiny ones, which is both much
  faster to write and far smaller on disk (no 4 KB block per 100-byte file).

Publishing is atomic: a loose blob is written to a temporary file and ``os.replace``d; a pack is
written as ``*.pack.tmp``, renamed, and only then is its index published (also via
``os.replace``). A blob is visible only once published, and the journal line that references it
is appended after that, so a crash leaves at most stray temporary files (removed by gc).
Index format: records of (32-byte raw sha256, u64 offset, u32 length, u64 raw size).

Every read is verified: the decompressed bytes must hash to the blob id (:meth:`BlobStore.get`,
:meth:`BlobStore.write_to`, :meth:`BlobStore.check`), else :class:`BlobCorrupt` is raised, so a
flipped bit on disk is never shown or written as if it were the recorded content.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH103, PTH105, PTH108, PTH110, PTH112, PTH118, PTH119, PTH120, PTH123, PTH208

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol

import zstandard

from retrace.engine.errors import BlobCorrupt, RetraceError
from retrace.oscompat import O_BINARY, O_CLOEXEC, pread

ZSTD_LEVEL = 1
"""zstd's fastest standard level: on real source files (a few KiB each) it compresses two to
three times faster than level 3 for about 3 % more bytes, and a checkpoint of a formatter run
compresses every file it touched on the critical path. Any level reads back the same way."""
RECENT_BYTES = 8 << 20
"""Raw bytes of recently stored/read blobs kept in memory: a checkpoint's line statistics read
back what the capture just stored (and the next change of a file reads its last version)."""
RECENT_MAX_BLOB = 256 << 10
STREAM_CHUNK = 1 << 20
"""Bytes per step of a streaming read (:meth:`BlobStore.write_to`): memory stays bounded."""
_IDX = struct.Struct("<32sQIQ")


_NOINHERIT = O_CLOEXEC | O_BINARY
"""Flags of every store file this module opens (binary on Windows, never inherited)."""


class BlobSource(Protocol):
    """Blobs kept elsewhere (a remote's cached pack indexes): the one seam the engine has for
    remote storage. ``fetch`` returns the zstd payload exactly as this store keeps it; the store
    verifies it like any read."""

    def ids(self) -> set[str]:
        """Blob ids the source can supply."""
        ...

    def fetch(self, bid: str) -> bytes:
        """The stored (zstd) payload of ``bid``; raises ``RetraceError`` (one line) on failure."""
        ...


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _verified(bid: str, payload: bytes, *, remote: bool = False) -> bytes:
    """The raw bytes of a stored payload, checked against their id (``remote``: the payload is a
    remote's copy, and the error says so)."""
    try:
        data = zstandard.ZstdDecompressor().decompress(payload)
    except zstandard.ZstdError as exc:
        which = "its remote copy " if remote else ""
        raise BlobCorrupt(bid, f"{which}cannot be decompressed ({exc})") from None
    if blob_id(data) != bid:
        which = "its remote copy" if remote else "its content"
        raise BlobCorrupt(bid, f"{which} does not match its hash")
    return data


class BlobStore:
    """Blobs under ``root``. ``durable`` fsyncs new blobs and packs before they are published."""

    def __init__(self, root: Path, *, durable: bool = False) -> None:
        self.root = root
        self._root = str(root)
        self._packs_dir = os.path.join(self._root, "packs")
        self.durable = durable
        self._local = threading.local()
        self._known: set[str] = set()
        self._packed: dict[str, tuple[str, int, int, int]] = {}
        """blob id → (pack path, offset, compressed length, raw size)."""
        self._dead: set[str] = set()
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        self._recent_bytes = 0
        self._recent_lock = threading.Lock()
        self._source: BlobSource | None = None
        self._source_ids: set[str] = set()
        self._load_packs()

    # ------------------------------------------------------------------ remote source
    def attach_source(self, source: BlobSource) -> None:
        """Blobs missing here are read from ``source`` (a remote): ``has``/``ids`` include its ids;
        the first read of one fetches the payload, verifies it and publishes it as a loose blob."""
        self._source = source
        self._source_ids = set(source.ids())

    def remote_only(self, bid: str) -> bool:
        """True when ``bid`` is not stored here but the attached source can supply it."""
        return bid in self._source_ids and not self.has_local(bid)

    def _fetch_remote(self, bid: str) -> bytes:
        """Fetch, verify and publish (as a loose blob) a remote-only blob; returns its payload."""
        assert self._source is not None
        try:
            payload = self._source.fetch(bid)
        except BlobCorrupt:
            raise
        except RetraceError as exc:
            raise RetraceError(f"blob {bid} is only in the remote: {exc}") from None
        data = _verified(bid, payload, remote=True)
        self.put_payload(bid, payload)
        self._remember(bid, data)
        return payload

    def put_payload(self, bid: str, payload: bytes) -> None:
        """Publish an already-compressed, already-verified payload as a loose blob."""
        dest = self._spath(bid)
        shard = os.path.dirname(dest)
        if not os.path.isdir(shard):
            os.makedirs(shard, exist_ok=True)
        tmp = f"{dest}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOINHERIT, 0o644)
        try:
            write_all(fd, payload)
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
        self._known.add(bid)

    def _remember(self, bid: str, data: bytes) -> None:
        if len(data) > RECENT_MAX_BLOB:
            return
        with self._recent_lock:
            if bid in self._recent:
                self._recent.move_to_end(bid)
                return
            self._recent[bid] = data
            self._recent_bytes += len(data)
            while self._recent_bytes > RECENT_BYTES:
                _b, old = self._recent.popitem(last=False)
                self._recent_bytes -= len(old)

    def _forget_recent(self, bid: str) -> None:
        with self._recent_lock:
            data = self._recent.pop(bid, None)
            if data is not None:
                self._recent_bytes -= len(data)

    # ------------------------------------------------------------------ packs
    def _load_packs(self) -> None:
        if not os.path.isdir(self._packs_dir):
            return
        for name in sorted(os.listdir(self._packs_dir)):
            if name.endswith(".idx"):
                self._load_index(os.path.join(self._packs_dir, name))

    def _load_index(self, idx_path: str) -> None:
        pack = idx_path[:-4] + ".pack"
        try:
            with open(idx_path, "rb") as f:
                raw = f.read()
        except OSError:
            return
        usable = len(raw) - len(raw) % _IDX.size
        for h, off, ln, size in _IDX.iter_unpack(raw[:usable]):
            self._packed[h.hex()] = (pack, off, ln, size)

    def batch(self) -> PackBatch:
        """A pack being written; blobs put into it become visible when it is closed."""
        return PackBatch(self)

    # ------------------------------------------------------------------ loose blobs
    def _ctx(self) -> zstandard.ZstdCompressor:
        # zstd contexts are not thread-safe; captures hash and store from a thread pool.
        cctx: zstandard.ZstdCompressor | None = getattr(self._local, "cctx", None)
        if cctx is None:
            cctx = self._local.cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        return cctx

    def compress(self, data: bytes) -> bytes:
        return self._ctx().compress(data)

    def path(self, bid: str) -> Path:
        """Where the LOOSE copy of a blob lives (it may be packed instead)."""
        return Path(self._spath(bid))

    def _spath(self, bid: str) -> str:
        return os.path.join(self._root, bid[:2], bid)

    def has(self, bid: str) -> bool:
        """Stored here, or available from the attached remote source."""
        return self.has_local(bid) or bid in self._source_ids

    def has_local(self, bid: str) -> bool:
        """Stored here (loose or packed), whatever the remote source has."""
        if bid in self._known or bid in self._packed:
            return True
        if os.path.exists(self._spath(bid)):
            self._known.add(bid)
            return True
        return False

    def put(self, data: bytes, bid: str | None = None) -> str:
        """Store ``data`` as a loose blob (no-op when already present); returns its id."""
        bid = bid or blob_id(data)
        if self.has_local(bid):
            return bid
        self.put_payload(bid, self.compress(data))
        self._remember(bid, data)
        return bid

    def _payload(self, bid: str) -> bytes:
        loc = self._packed.get(bid)
        if loc is not None:
            pack, off, ln, _size = loc
            try:
                fd = os.open(pack, os.O_RDONLY | _NOINHERIT)
            except FileNotFoundError:
                raise BlobCorrupt(bid, f"its pack {os.path.basename(pack)} is missing") from None
            try:
                payload = pread(fd, ln, off)
            finally:
                os.close(fd)
            if len(payload) != ln:
                raise BlobCorrupt(bid, f"its pack {os.path.basename(pack)} is truncated")
            return payload
        try:
            with open(self._spath(bid), "rb") as f:
                return f.read()
        except FileNotFoundError:
            if bid in self._source_ids:
                return self._fetch_remote(bid)
            raise BlobCorrupt(bid, "missing from the store") from None

    def payload(self, bid: str) -> bytes:
        """The blob's stored (zstd) bytes, unverified (sync packs carry them as they are)."""
        return self._payload(bid)

    def pack_of(self, bid: str) -> str | None:
        """Path of the pack holding ``bid`` (``None`` when it is not packed)."""
        loc = self._packed.get(bid)
        return loc[0] if loc is not None else None

    def get_cached(self, bid: str) -> bytes:
        """:meth:`get`, served from memory when the blob was stored or read recently (for
        statistics; ``get`` always reads the store, so it notices a damaged blob). Memory only
        ever holds bytes that were hashed to their id (on ``put``) or verified (on ``get``)."""
        data = self._recent.get(bid)
        return data if data is not None else self.get(bid)

    def get(self, bid: str) -> bytes:
        """The blob's bytes, verified against its id; :class:`BlobCorrupt` when they cannot be
        read, decompressed, or do not hash to ``bid``."""
        data = _verified(bid, self._payload(bid))
        self._remember(bid, data)
        return data

    def write_to(self, bid: str, out: BinaryIO) -> int:
        """Stream the blob's bytes into ``out`` in bounded chunks, hashing as it goes; returns
        the byte count. Raises :class:`BlobCorrupt` at the end when the bytes do not hash to
        ``bid`` — by then ``out`` holds unverified bytes, so write into a temporary file and
        publish it only when this returns."""
        digest = hashlib.sha256()
        total = 0
        try:
            for chunk in self._chunks(bid):
                digest.update(chunk)
                out.write(chunk)
                total += len(chunk)
        except zstandard.ZstdError as exc:
            raise BlobCorrupt(bid, f"cannot be decompressed ({exc})") from None
        if digest.hexdigest() != bid:
            raise BlobCorrupt(bid, "its content does not match its hash")
        return total

    def check(self, bid: str) -> str | None:
        """Verify one stored blob without keeping its bytes: ``None`` when it is intact, else
        why it is damaged (missing, truncated, undecodable, wrong hash)."""
        digest = hashlib.sha256()
        try:
            for chunk in self._chunks(bid):
                digest.update(chunk)
        except BlobCorrupt as exc:
            return exc.reason
        except zstandard.ZstdError as exc:
            return f"cannot be decompressed ({exc})"
        except OSError as exc:
            return f"cannot be read ({exc})"
        return None if digest.hexdigest() == bid else "its content does not match its hash"

    def _chunks(self, bid: str) -> Iterator[bytes]:
        """Decompressed bytes of a blob, ``STREAM_CHUNK`` at a time (unverified)."""
        loc = self._packed.get(bid)
        source: BinaryIO
        if loc is not None:
            source = io.BufferedReader(_PackSlice(loc[0], loc[1], loc[2], bid), STREAM_CHUNK)
        else:
            try:
                source = open(self._spath(bid), "rb")  # noqa: SIM115 (closed below)
            except FileNotFoundError:
                if bid not in self._source_ids:
                    raise BlobCorrupt(bid, "missing from the store") from None
                source = io.BytesIO(self._fetch_remote(bid))
        with source, zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True) as r:
            while chunk := r.read(STREAM_CHUNK):
                yield chunk

    def mark_known(self, ids: set[str]) -> None:
        """Seed the existence cache (from one listing) so ``has`` needs no stat per blob (ids
        only the remote source has are not stored here: left out)."""
        self._known |= ids - self._source_ids if self._source_ids else ids

    def loose_ids(self) -> Iterator[str]:
        if not os.path.isdir(self._root):
            return
        for shard in os.scandir(self._root):
            if shard.is_dir(follow_symlinks=False) and len(shard.name) == 2:
                for entry in os.scandir(shard.path):
                    if len(entry.name) == 64:
                        yield entry.name

    def ids(self) -> Iterator[str]:
        """Every stored blob id (loose and packed, each once)."""
        loose = set(self.loose_ids())
        yield from loose
        for bid in self._packed:
            if bid not in loose and bid not in self._dead:
                yield bid
        for bid in self._source_ids:
            if bid not in loose and bid not in self._packed:
                yield bid

    def local_ids(self) -> Iterator[str]:
        """Blob ids stored here (loose and packed, each once; never the remote source's)."""
        loose = set(self.loose_ids())
        yield from loose
        for bid in self._packed:
            if bid not in loose and bid not in self._dead:
                yield bid

    def raw_size(self, bid: str) -> int:
        """Uncompressed size (0 when unknown)."""
        loc = self._packed.get(bid)
        if loc is not None:
            return loc[3]
        if self.remote_only(bid):
            self._fetch_remote(bid)
        with open(self._spath(bid), "rb") as f:
            head = f.read(18)
        try:
            size = zstandard.frame_content_size(head)
        except zstandard.ZstdError:
            return 0
        return max(size, 0)

    def usage(self) -> tuple[int, int, int]:
        """(blob count, bytes on disk, raw bytes) over loose blobs and packs."""
        count = disk = raw = 0
        loose = set(self.loose_ids())
        for bid in loose:
            try:
                disk += os.lstat(self._spath(bid)).st_size
                raw += self.raw_size(bid)
            except OSError:
                continue
            count += 1
        for bid, (_p, _o, _l, size) in self._packed.items():
            if bid not in loose and bid not in self._dead:
                count += 1
                raw += size
        if os.path.isdir(self._packs_dir):
            for entry in os.scandir(self._packs_dir):
                disk += entry.stat(follow_symlinks=False).st_size
        return count, disk, raw

    def remove(self, bid: str) -> int:
        """Delete one blob (packed ones are dropped by :meth:`compact_packs`); bytes freed."""
        self._known.discard(bid)
        self._forget_recent(bid)
        if bid in self._packed:
            self._dead.add(bid)
        p = self._spath(bid)
        try:
            size = os.lstat(p).st_size
            os.unlink(p)
        except FileNotFoundError:
            return 0
        return size

    def compact_packs(self) -> None:
        """Rewrite every pack holding removed blobs with its live blobs only."""
        if not self._dead:
            return
        by_pack: dict[str, list[str]] = {}
        for bid, (pack, *_rest) in self._packed.items():
            by_pack.setdefault(pack, []).append(bid)
        for pack, bids in by_pack.items():
            if not any(b in self._dead for b in bids):
                continue
            live = [b for b in bids if b not in self._dead]
            if live:
                with self.batch() as out:
                    for b in live:
                        out.put_compressed(b, self._payload(b), self._packed[b][3])
            # The new pack (if any) is published: now the old one can go, index first.
            for b in bids:
                if self._packed.get(b, ("",))[0] == pack:
                    del self._packed[b]
            for path in (pack[:-5] + ".idx", pack):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        self._dead.clear()

    def remove_stray_tmp(self) -> None:
        """Temporary files and unindexed packs left by a crash (call with the writer lock)."""
        if not os.path.isdir(self._root):
            return
        if os.path.isdir(self._packs_dir):
            names = set(os.listdir(self._packs_dir))
            for name in names:
                if name.endswith(".pack") and name[:-5] + ".idx" not in names:
                    os.unlink(os.path.join(self._packs_dir, name))
        for shard in os.scandir(self._root):
            if shard.is_dir(follow_symlinks=False):
                for entry in os.scandir(shard.path):
                    if entry.name.endswith(".tmp"):
                        Path(entry.path).unlink(missing_ok=True)


class _PackSlice(io.RawIOBase):
    """A read-only file over ``length`` bytes at ``offset`` of a pack (streams one packed blob)."""

    def __init__(self, pack: str, offset: int, length: int, bid: str) -> None:
        super().__init__()
        try:
            self._fd = os.open(pack, os.O_RDONLY | _NOINHERIT)
        except FileNotFoundError:
            raise BlobCorrupt(bid, f"its pack {os.path.basename(pack)} is missing") from None
        self._pos = offset
        self._end = offset + length
        self._bid = bid
        self._pack = pack

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        want = min(len(buf), self._end - self._pos)
        if want <= 0:
            return 0
        data = pread(self._fd, want, self._pos)
        if not data:
            raise BlobCorrupt(self._bid, f"its pack {os.path.basename(self._pack)} is truncated")
        buf[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


class PackBatch:
    """Collects blobs into one new pack (thread-safe ``put``); publishes it on close."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._fd = -1
        self._off = 0
        self._entries: dict[str, tuple[int, int, int]] = {}
        self._name = f"pack-{time.time_ns():x}-{os.getpid()}"

    def __enter__(self) -> PackBatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(publish=exc is None)

    def put(self, data: bytes, bid: str | None = None) -> str:
        bid = bid or blob_id(data)
        s = self.store
        # No stat per blob: the engine seeds ``_known`` with the loose listing on open, and a
        # rare duplicate of a loose blob inside a pack is harmless.
        if bid in s._known or bid in s._packed or bid in self._entries:
            return bid
        s._remember(bid, data)
        return self.put_compressed(bid, self.store.compress(data), len(data))

    def put_compressed(self, bid: str, payload: bytes, raw_size: int) -> str:
        with self._lock:
            if bid in self._entries:
                return bid
            if self._fd < 0:
                os.makedirs(self.store._packs_dir, exist_ok=True)
                tmp = os.path.join(self.store._packs_dir, self._name + ".pack.tmp")
                self._fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOINHERIT, 0o644)
            write_all(self._fd, payload)
            self._entries[bid] = (self._off, len(payload), raw_size)
            self._off += len(payload)
        return bid

    def close(self, *, publish: bool = True) -> None:
        if self._fd < 0:
            return
        base = os.path.join(self.store._packs_dir, self._name)
        try:
            if self.store.durable:
                os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = -1
        if not publish:
            os.unlink(base + ".pack.tmp")
            for bid in self._entries:
                self.store._forget_recent(bid)
            return
        os.replace(base + ".pack.tmp", base + ".pack")
        idx = b"".join(_IDX.pack(bytes.fromhex(b), o, ln, s) for b, (o, ln, s) in self._entries.items())
        fd = os.open(base + ".idx.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOINHERIT, 0o644)
        try:
            write_all(fd, idx)
            if self.store.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(base + ".idx.tmp", base + ".idx")
        for b, (o, ln, s) in self._entries.items():
            self.store._packed[b] = (base + ".pack", o, ln, s)
