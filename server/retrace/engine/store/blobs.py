"""Content-addressed blob store: ``blobs/ab/<sha256>``, zstd-compressed, deduplicated.

A blob id is the hex SHA-256 of the RAW bytes, so identical contents are stored once across
every session of the workspace. Writes go to a temporary file in the same directory and are
published with ``os.replace``: a reader never sees a half-written blob, and a crash leaves at
most a stray ``*.tmp`` file (removed by gc).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH103, PTH105, PTH110, PTH112, PTH118, PTH120, PTH123

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import zstandard

from retrace.engine.errors import StoreCorrupt

ZSTD_LEVEL = 3


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def blob_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class BlobStore:
    """Blobs under ``root``. ``durable`` fsyncs each new blob before it is published."""

    def __init__(self, root: Path, *, durable: bool = False) -> None:
        self.root = root
        self._root = str(root)
        self.durable = durable
        self._local = threading.local()
        self._known: set[str] = set()

    def _ctx(self) -> zstandard.ZstdCompressor:
        # zstd contexts are not thread-safe; the capture hashes and stores from a thread pool.
        cctx: zstandard.ZstdCompressor | None = getattr(self._local, "cctx", None)
        if cctx is None:
            cctx = self._local.cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        return cctx

    def path(self, bid: str) -> Path:
        return Path(self._spath(bid))

    def _spath(self, bid: str) -> str:
        return os.path.join(self._root, bid[:2], bid)

    def has(self, bid: str) -> bool:
        if bid in self._known:
            return True
        if os.path.exists(self._spath(bid)):
            self._known.add(bid)
            return True
        return False

    def put(self, data: bytes, bid: str | None = None) -> str:
        """Store ``data`` (no-op when already present); returns its id."""
        bid = bid or blob_id(data)
        if self.has(bid):
            return bid
        dest = self._spath(bid)
        shard = os.path.dirname(dest)
        if not os.path.isdir(shard):
            os.makedirs(shard, exist_ok=True)
        tmp = f"{dest}.{os.getpid()}.tmp"
        payload = self._ctx().compress(data)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, payload)
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
        self._known.add(bid)
        return bid

    def get(self, bid: str) -> bytes:
        try:
            with open(self._spath(bid), "rb") as f:
                payload = f.read()
        except FileNotFoundError:
            raise StoreCorrupt(f"blob {bid} is missing from the store") from None
        try:
            data = zstandard.ZstdDecompressor().decompress(payload)
        except zstandard.ZstdError as exc:
            raise StoreCorrupt(f"blob {bid} cannot be decompressed: {exc}") from None
        return data

    def mark_known(self, ids: set[str]) -> None:
        """Seed the existence cache (from one listing) so ``has`` needs no stat per blob."""
        self._known |= ids

    def ids(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for shard in os.scandir(self.root):
            if shard.is_dir(follow_symlinks=False) and len(shard.name) == 2:
                for entry in os.scandir(shard.path):
                    if len(entry.name) == 64 and not entry.name.endswith(".tmp"):
                        yield entry.name

    def raw_size(self, bid: str) -> int:
        """Uncompressed size from the zstd frame header (0 when unknown)."""
        with self.path(bid).open("rb") as f:
            head = f.read(18)
        try:
            size = zstandard.frame_content_size(head)
        except zstandard.ZstdError:
            return 0
        return max(size, 0)

    def remove(self, bid: str) -> int:
        """Delete one blob; returns the bytes freed."""
        p = self.path(bid)
        try:
            size = p.stat().st_size
            p.unlink()
        except FileNotFoundError:
            return 0
        self._known.discard(bid)
        return size

    def remove_stray_tmp(self) -> None:
        if not self.root.is_dir():
            return
        for shard in os.scandir(self.root):
            if shard.is_dir(follow_symlinks=False):
                for entry in os.scandir(shard.path):
                    if entry.name.endswith(".tmp"):
                        Path(entry.path).unlink(missing_ok=True)
