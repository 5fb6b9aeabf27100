"""The stat cache: path → (stat identity, entry), so a walk re-hashes only what changed.

Modelled on git's index: a row vouches for a file only while its FULL stat identity is
unchanged (a writer can keep size and mtime, not the ctime the kernel sets), and a row whose
mtime is within :data:`RACY_NS` (or ctime within :data:`CTIME_RACY_NS`) of the moment it
was recorded is "racily clean" and never vouches. It is a cache: losing it only costs re-hashing.
"""

from __future__ import annotations

import marshal
import os
import struct
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

Row = tuple[bytes | None, str, str | None, int, bool, str | None, str | None]
"""(stat key, kind, hash, size, executable, target, unstored). The stat key packs the full
stat identity (:data:`_KEY`) into one bytes object, so vouching is one comparison and a
50k-row cache costs a third of the memory of per-field ints; it is ``None`` for a row that
was racily clean when recorded (the verdict depends only on recorded values, so it is taken
once, at :meth:`StatCache.put`)."""

_KEY = struct.Struct("<qqqQQQ")
"""size, mtime_ns, ctime_ns, ino, dev, mode."""


def stat_key(st: os.stat_result) -> bytes | None:
    """The packed stat identity of ``st`` (``None`` if a field does not fit: never vouches)."""
    try:
        return _KEY.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode)
    except struct.error:
        return None


def racily_clean(st: os.stat_result, recorded_ns: int) -> bool:
    """Whether a row recorded at ``recorded_ns`` for a file with lstat ``st`` cannot tell a
    later write in the same timestamp granule from no write at all. The model is git's
    index: a writer can keep size and mtime (``touch -r``, ``cp -p``, ``rsync -a``,
    ``tar x``) but not the ctime the kernel sets on every content or metadata change; and a
    row recorded while the file's timestamps were still within :data:`RACY_NS` (mtime) or
    :data:`CTIME_RACY_NS` (ctime) of "now" never vouches."""
    return recorded_ns - st.st_mtime_ns < RACY_NS or recorded_ns - st.st_ctime_ns < CTIME_RACY_NS


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


def _valid(rows: Any) -> bool:
    """A loaded table has the shape this version writes (checked on a sample and lazily per
    row: :meth:`StatCache.lookup` treats a malformed row as a miss)."""
    if not isinstance(rows, dict):
        return False
    for row in list(rows.values())[:8]:
        if not (isinstance(row, tuple) and len(row) == 7 and isinstance(row[0], bytes | None)):
            return False
    return True


class StatCache:
    """path → :data:`Row`. Only a cache: any load problem just empties it (everything gets
    re-hashed once), a malformed row is a miss."""

    VERSION = 5

    def __init__(self, path: Path) -> None:
        self.path = path
        self._d: dict[str, Row] = {}
        self.dirty = False

    def __len__(self) -> int:
        return len(self._d)

    def load(self) -> None:
        try:
            # marshal: ten times faster than JSON for 50k rows; it is only a cache, so an
            # unreadable file (another Python version, corruption) just means re-hashing.
            raw = marshal.loads(self.path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return
        if isinstance(raw, dict) and raw.get("version") == self.VERSION and _valid(raw.get("entries")):
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
        row = self._d.get(rel)
        if row is None:
            return None
        try:
            if row[0] is None or row[0] != stat_key(st):
                return None
            return (row[1], row[2], row[3], row[4], row[5], row[6])
        except (IndexError, TypeError):
            return None

    def vouches(self, rel: str, st: os.stat_result, e: FileEntry | None) -> bool:
        """``lookup`` + ``matches`` in one call (the warm-open walk does this 50k times: the
        entry's fields are read from its ``__dict__``, a third of the cost of model attributes)."""
        row = self._d.get(rel)
        if row is None or e is None:
            return False
        try:
            ed = e.__dict__
            return bool(
                row[0] is not None
                and row[0]
                == _KEY.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode)
                and row[2] == ed["hash"]
                and row[1] == ed["kind"]
                and row[4] == ed["executable"]
                and row[3] == ed["size"]
                and row[5] == ed["target"]
            )
        except (IndexError, TypeError, KeyError, struct.error):
            return False

    def put(self, rel: str, st: os.stat_result, e: FileEntry) -> None:
        key = None if racily_clean(st, time.time_ns()) else stat_key(st)
        self._d[rel] = (key, e.kind, e.hash, e.size, e.executable, e.target, e.unstored)
        self.dirty = True

    def drop(self, rel: str) -> None:
        if self._d.pop(rel, None) is not None:
            self.dirty = True

    def drop_hashes(self, hashes: set[str]) -> None:
        for p in [p for p, v in self._d.items() if len(v) > 2 and v[2] in hashes]:
            del self._d[p]
        self.dirty = True
