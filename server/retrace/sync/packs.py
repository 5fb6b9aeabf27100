"""Sync packs and sealed segments: the bytes of the objects this package uploads.

Contracts:

* A sync pack is the concatenation of blob payloads exactly as the local store keeps them (zstd),
  entries sorted by blob id, so building the same blobs gives the same bytes; its name is the
  sha256 of the pack object's bytes, so a retried upload writes the same key with the same bytes.
* Its index is records of (32-byte raw sha256, u64 offset, u32 length, u64 raw size) — the local
  pack index format — naming where each entry lies in the pack object.
* With a :class:`~retrace.sync.crypto.Cipher`, each entry is sealed on its own (associated data:
  the blob id) so one blob can be fetched with one range read; the index is sealed whole
  (associated data: its object key), so blob ids never leave the machine in clear; segments are
  sealed whole with their object key. This module is the only place that calls the cipher.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from retrace.sync.crypto import Cipher
from retrace.sync.keys import index_key

IDX = struct.Struct("<32sQIQ")
MAX_PACK_BYTES = 64 << 20
MAX_SEGMENT_BYTES = 8 << 20

Location = tuple[int, int, int]
"""(offset, length, raw size) of one entry in a pack object."""


@dataclass(frozen=True)
class BuiltPack:
    name: str
    data: bytes
    index: bytes
    """The index object as uploaded (sealed when encrypted)."""
    plain_index: bytes
    """The index in clear (what the local index cache keeps)."""
    blobs: int


def build_pack(entries: list[tuple[str, bytes, int]], cipher: Cipher | None) -> BuiltPack:
    """A pack of ``(blob id, stored payload, raw size)`` entries."""
    parts: list[bytes] = []
    records: list[bytes] = []
    off = 0
    for bid, payload, raw_size in sorted(entries):
        body = cipher.seal(payload, bid.encode()) if cipher else payload
        parts.append(body)
        records.append(IDX.pack(bytes.fromhex(bid), off, len(body), raw_size))
        off += len(body)
    data = b"".join(parts)
    name = hashlib.sha256(data).hexdigest()
    plain = b"".join(records)
    index = cipher.seal(plain, index_key(name).encode()) if cipher else plain
    return BuiltPack(name, data, index, plain, len(records))


def open_index(data: bytes, name: str, cipher: Cipher | None) -> bytes:
    """The clear index of pack ``name`` from its uploaded object."""
    return cipher.open(data, index_key(name).encode()) if cipher else data


def parse_index(plain: bytes) -> dict[str, Location]:
    usable = len(plain) - len(plain) % IDX.size
    return {h.hex(): (off, ln, size) for h, off, ln, size in IDX.iter_unpack(plain[:usable])}


def open_entry(data: bytes, bid: str, cipher: Cipher | None) -> bytes:
    """The stored (zstd) payload of ``bid`` from its bytes in a pack object."""
    return cipher.open(data, bid.encode(), name=f"blob {bid}") if cipher else data


def seal_segment(data: bytes, key: str, cipher: Cipher | None) -> bytes:
    return cipher.seal(data, key.encode()) if cipher else data


def open_segment(data: bytes, key: str, cipher: Cipher | None) -> bytes:
    return cipher.open(data, key.encode()) if cipher else data


def cut_segments(data: bytes, limit: int = MAX_SEGMENT_BYTES) -> list[bytes]:
    """``data`` (whole lines) cut at newlines into pieces of at most ``limit`` bytes (a single
    longer line is one piece)."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        end = min(pos + limit, len(data))
        if end < len(data):
            cut = data.rfind(b"\n", pos, end)
            end = cut + 1 if cut >= pos else data.index(b"\n", end) + 1
        out.append(data[pos:end])
        pos = end
    return out
