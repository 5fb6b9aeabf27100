"""Helpers that damage a Retrace store the way disks and people do: flipped bytes, truncated or
deleted blobs, blobs swapped for other valid content, and bad journal lines."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import zstandard

IDX = struct.Struct("<32sQIQ")
BLOB_DAMAGE = ("flip", "truncate", "delete", "substitute")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_location(store: Path, bid: str) -> tuple[Path, int, int]:
    """(file, offset, length) of a blob's compressed bytes, loose or packed."""
    loose = store / "blobs" / bid[:2] / bid
    if loose.exists():
        return loose, 0, loose.stat().st_size
    packs = store / "blobs" / "packs"
    for idx in sorted(packs.glob("*.idx")) if packs.is_dir() else []:
        raw = idx.read_bytes()
        for h, off, ln, _size in IDX.iter_unpack(raw[: len(raw) - len(raw) % IDX.size]):
            if h.hex() == bid:
                return idx.with_suffix(".pack"), off, ln
    raise AssertionError(f"blob {bid} is not in the store")


def damage_blob(store: Path, bid: str, how: str, evil: bytes = b"EVIL CONTENT\n") -> None:
    """Damage one blob in place. ``substitute`` swaps in a valid compressed frame of ``evil``."""
    path, off, ln = blob_location(store, bid)
    if how == "delete" and off == 0 and path.parent.name == bid[:2]:
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if how == "flip":
        pos = off + ln // 2
        data[pos] ^= 0xFF
    elif how in ("truncate", "delete"):
        # A loose blob is cut in half; a packed one loses its tail (the pack is truncated there).
        data = data[: off + ln // 2] if how == "truncate" else data[:off]
    elif how == "substitute":
        frame = zstandard.ZstdCompressor().compress(evil)
        if off == 0 and path.parent.name == bid[:2]:
            data = bytearray(frame)
        else:
            # Same length inside a pack: pad the frame with a skippable frame.
            pad = ln - len(frame) - 8
            assert pad >= 0, "blob too small to substitute in place"
            data[off : off + ln] = frame + struct.pack("<II", 0x184D2A50, pad) + b"\0" * pad
    else:
        raise ValueError(how)
    path.write_bytes(bytes(data))
    os.utime(path)
