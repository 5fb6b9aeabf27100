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
* Without a cipher, segments and store cards carry a seal line (sha256 of their key and body),
  checked on every read: a flipped bit, a cut or a moved object is refused, never opened.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from retrace.sync.crypto import OVERHEAD, Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.keys import index_key
from retrace.sync.limits import SEGMENT_CUT_BYTES

IDX = struct.Struct("<32sQIQ")
MAX_PACK_BYTES = 64 << 20
MAX_SEGMENT_BYTES = SEGMENT_CUT_BYTES

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


def check_index(plain: bytes, name: str, pack_size: int | None) -> None:
    """Refuse an index that is not whole records, or names bytes beyond its pack object
    (``pack_size`` as listed; ``None``: not listed, nothing to compare)."""
    if len(plain) % IDX.size:
        raise RemoteError(f"remote pack index {index_key(name)} is not whole entries: not used")
    if pack_size is not None:
        for _h, off, ln, _size in IDX.iter_unpack(plain):
            if off + ln > pack_size:
                raise RemoteError(
                    f"remote pack index {index_key(name)} names bytes {off}..{off + ln} of a "
                    f"{pack_size}-byte pack: not used"
                )


def parse_index(plain: bytes) -> dict[str, Location]:
    usable = len(plain) - len(plain) % IDX.size
    return {h.hex(): (off, ln, size) for h, off, ln, size in IDX.iter_unpack(plain[:usable])}


def open_entry(data: bytes, bid: str, cipher: Cipher | None) -> bytes:
    """The stored (zstd) payload of ``bid`` from its bytes in a pack object."""
    return cipher.open(data, bid.encode(), name=f"blob {bid}") if cipher else data


SEAL = b"retrace-seg1 "
"""First bytes of a sealed segment or store card in a bucket without encryption: the seal line is
``SEAL + sha256(object key, newline, body) in hex + newline``, then the body. (Encrypted objects
are sealed by AES-GCM with the key as associated data instead.)"""
SEAL_BYTES = len(SEAL) + 64 + 1


def _digest(body: bytes, key: str) -> bytes:
    return hashlib.sha256(key.encode() + b"\n" + body).hexdigest().encode("ascii")


def seal_segment(data: bytes, key: str, cipher: Cipher | None) -> bytes:
    """The object to upload under ``key`` for ``data`` (a segment's journal bytes or a store
    card): sealed so that :func:`open_segment` detects any change to its bytes, a truncation, or
    the object being moved to another key."""
    if cipher is not None:
        return cipher.seal(data, key.encode())
    return SEAL + _digest(data, key) + b"\n" + data


def open_segment(data: bytes, key: str, cipher: Cipher | None) -> bytes:
    """The body of the object ``key`` after checking its seal; :class:`RemoteError` when it does
    not hold (nothing of a damaged object is ever returned). An object pushed by Retrace 0.1.0
    (no seal line: it starts with ``{``, which no single flipped bit makes of the seal) is
    returned as it is: see :func:`sealed`."""
    if cipher is not None:
        return cipher.open(data, key.encode())
    if not data.startswith(SEAL):
        if data.startswith(b"{"):
            return data
        raise RemoteError(f"remote object {key} is damaged: it does not start with a seal")
    head, body = data[:SEAL_BYTES], data[SEAL_BYTES:]
    if head[-1:] != b"\n" or head[len(SEAL) : -1] != _digest(body, key):
        raise RemoteError(
            f"remote object {key} is damaged: its {len(body)} bytes do not match its seal "
            "(changed, cut short or moved from another key)"
        )
    return body


def sealed(data: bytes, cipher: Cipher | None) -> bool:
    """Whether an object as uploaded carries a seal (encrypted objects always do)."""
    return cipher is not None or data.startswith(SEAL)


def object_overhead(cipher: Cipher | None) -> int:
    """Bytes a sealed object holds beyond its body."""
    return OVERHEAD if cipher is not None else SEAL_BYTES


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
