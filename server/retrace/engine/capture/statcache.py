"""The stat cache: path → (size, mtime_ns, ctime_ns, ino, dev, mode, entry), so a walk re-hashes
only what changed.

Modelled on git's index: a row vouches for a file only while its FULL stat identity is
unchanged (a writer can keep size and mtime, not the ctime the kernel sets), and a row whose
mtime is within :data:`RACY_NS` (or ctime within :data:`CTIME_RACY_NS`) of the moment it
was recorded is "racily clean" and never vouches. It is a cache: losing it only costs re-hashing.
"""

from __future__ import annotations

import marshal
import os
import time
from pathlib import Path
from typing import Any, Literal

from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry

RACY_NS = 2_000_000_000
"""mtime margin: a row recorded less than this after the file's mtime is racily clean. Wide
enough for the coarsest timestamps in use (2 s on FAT) and small clock differences."""
CTIME_RACY_NS = 100_000_000
"""ctime margin. The kernel stamps ctime itself from its own clock at jiffy granularity (at
most 10 ms) on every content or metadata change, so a write after the row was recorded gets
a different ctime once this much time has passed; 10x headroom. (A 2 s margin here would make
every freshly written tree re-hash on the next walk.)"""


CachedEntry = tuple[str, str | None, int, bool, str | None, str | None]
"""(kind, hash, size, executable, target, unstored): a FileEntry's fields, cheap to store."""


def matches(e: FileEntry | None, key: CachedEntry) -> bool:
    return (
        e is not None
        and e.hash == key[1]
        and e.kind == key[0]
        and e.executable == key[3]
        and e.size == key[2]
        and e.target == key[4]
    )


def entry_of(key: CachedEntry) -> FileEntry:
    kind: Literal["file", "symlink"] = "symlink" if key[0] == "symlink" else "file"
    return make_entry(kind, key[1], key[2], executable=key[3], target=key[4], unstored=key[5])


def _same_stat(v: list[Any], st: os.stat_result) -> bool:
    """Whether a cached row still vouches for a file with lstat ``st``: the full stat identity
    is unchanged AND the row is not racily clean. The model is git's index: a writer can keep
    size and mtime (``touch -r``, ``cp -p``, ``rsync -a``, ``tar x``) but not the ctime the
    kernel sets on every content or metadata change; and a row recorded while the file's
    timestamps were still within :data:`RACY_NS` of "now" cannot tell a later write in the
    same timestamp granule from no write at all, so it never vouches."""
    try:
        return bool(
            v[0] == st.st_size
            and v[1] == st.st_mtime_ns
            and v[2] == st.st_ctime_ns
            and v[3] == st.st_ino
            and v[4] == st.st_dev
            and v[5] == st.st_mode
            and v[6] - v[1] >= RACY_NS
            and v[6] - v[2] >= CTIME_RACY_NS
        )
    except (IndexError, TypeError):
        return False


class StatCache:
    """path → [size, mtime_ns, ctime_ns, ino, dev, mode, cached_at_ns, *entry fields]. Only a
    cache: any load problem just empties it (everything gets re-hashed once)."""

    VERSION = 4

    def __init__(self, path: Path) -> None:
        self.path = path
        self._d: dict[str, list[Any]] = {}
        self.dirty = False

    def load(self) -> None:
        try:
            # marshal: ten times faster than JSON for 50k rows; it is only a cache, so an
            # unreadable file (another Python version, corruption) just means re-hashing.
            raw = marshal.loads(self.path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return
        if (
            isinstance(raw, dict)
            and raw.get("version") == self.VERSION
            and isinstance(raw.get("entries"), dict)
        ):
            self._d = raw["entries"]

    def save(self) -> None:
        if not self.dirty:
            return
        data = {"version": self.VERSION, "entries": self._d}
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps(data))
        tmp.replace(self.path)
        self.dirty = False

    def lookup(self, rel: str, st: os.stat_result) -> CachedEntry | None:
        v = self._d.get(rel)
        if v is None or not _same_stat(v, st):
            return None
        try:
            return (v[7], v[8], v[9], v[10], v[11], v[12])
        except (IndexError, TypeError):
            return None

    def vouches(self, rel: str, st: os.stat_result, e: FileEntry | None) -> bool:
        """``lookup`` + ``matches`` in one call (the warm-open walk does this 50k times)."""
        v = self._d.get(rel)
        if v is None or e is None or not _same_stat(v, st):
            return False
        try:
            return bool(
                v[8] == e.hash
                and v[7] == e.kind
                and v[10] == e.executable
                and v[9] == e.size
                and v[11] == e.target
            )
        except (IndexError, TypeError):
            return False

    def put(self, rel: str, st: os.stat_result, e: FileEntry) -> None:
        self._d[rel] = [
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_dev,
            st.st_mode,
            time.time_ns(),
            e.kind,
            e.hash,
            e.size,
            e.executable,
            e.target,
            e.unstored,
        ]
        self.dirty = True

    def drop(self, rel: str) -> None:
        if self._d.pop(rel, None) is not None:
            self.dirty = True

    def drop_hashes(self, hashes: set[str]) -> None:
        for p in [p for p, v in self._d.items() if len(v) > 8 and v[8] in hashes]:
            del self._d[p]
        self.dirty = True
