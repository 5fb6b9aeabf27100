"""The parsed-line cache: what replay made of each checkpoint line, so a warm open reads it
instead of parsing every line again (``<store>/cache/history-lines.marshal``).

Replay turns a checkpoint line into a checkpoint, a delta, a snapshot id, its local creation
number (:mod:`.origin`), the paths that failed the workspace rule, and the copy of its parent's
data. Those are a pure function of the line's bytes, the store's origin key and the platform's
path rule; this cache keeps them per journal, next to the history index (:mod:`.index`), which
already decides cheaply whether a journal's prefix is the one it recorded.

Contracts:

* The journals stay the only truth. A journal's entries are used only while the history index
  trusts that journal's recorded prefix AND the cache was written for exactly that prefix (its
  length and digest), and either this open checked the prefix's digest (the journal grew) or
  the journal's status-change time is the one the cache recorded, recorded more than
  :data:`CTIME_RACY_NS` after it (git's rule: a rewrite in place can keep a file's size and
  modification time, not the ctime the kernel sets). Only lines the index located inside that
  prefix are taken from it. Anything else is parsed from the journal, as without a cache.
* Untrusted input: the file is sealed (a version and a keyed hash over the whole body, keyed
  with the store's origin key, which never leaves the machine) and checked before it is
  decoded; a missing, damaged, forged or other-version file, or one made under another origin
  key or path rule, is ignored as a whole (rebuilt from the journals). What it holds is checked
  again when read back (a checkpoint is validated by its model).
* Never required; written atomically (temporary file + rename), only when it changed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import marshal
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrace import oscompat
from retrace.engine.manifest import Delta, make_entry
from retrace.engine.models import Checkpoint

log = logging.getLogger(__name__)

VERSION = 2
CTIME_RACY_NS = 100_000_000
"""A ctime this close to the moment it was recorded may be followed by a write with the same one."""
_MAGIC = b"retrace-history-lines\n"

Entry = tuple[bytes, dict[str, Any] | None, str | None, int | None, list[tuple[str, str]], bytes | None]
"""(checkpoint as JSON text, delta as field tuples or ``None``, snapshot id, local creation
number, bad paths, the parent copy as read, as JSON text). Text rather than decoded objects: a
10,000-checkpoint cache loads as 20,000 strings, not as a million small objects (memory)."""


Journal = tuple[int, str, int, int, dict[int, Entry]]


@dataclass(frozen=True)
class Seen:
    """A journal as this replay's scan saw it."""

    prefix: tuple[int, str] | None
    """(length, digest) of the prefix the history index trusted (``None``: none)."""
    hashed: bool
    """Whether the scan checked that prefix's digest."""
    ctime_ns: int
    read_ns: int
    """When the scan read it (taken before its status)."""
    now: tuple[int, str, int]
    """(length, digest, newlines) of the prefix the index records after the scan."""


@dataclass
class CachedLine:
    """One checkpoint line as replay made it (rebuilt from the cache)."""

    cp: Checkpoint
    delta: Delta | None
    snapshot: str | None
    seq: int | None
    bad_paths: list[tuple[str, str]]
    copy_raw: object
    """The parent copy as read (a decoded object, or its JSON text when from the cache)."""


def _delta_out(delta: Delta | None) -> dict[str, Any] | None:
    if delta is None:
        return None
    return {
        p: None if e is None else (e.kind, e.hash, e.size, e.executable, e.target, e.unstored)
        for p, e in delta.items()
    }


def _delta_in(raw: dict[str, Any] | None) -> Delta | None:
    if raw is None:
        return None
    out: Delta = {}
    for p, t in raw.items():
        if t is None:
            out[p] = None
            continue
        kind, h, size, executable, target, unstored = t
        if kind not in ("file", "symlink"):
            raise ValueError("bad entry kind")
        out[p] = make_entry(kind, h, size, executable=executable, target=target, unstored=unstored)
    return out


@dataclass
class LineCache:
    """The cache of one store, bound to its origin key (``key``) and path rule."""

    path: Path | None
    key: bytes
    journals: dict[str, Journal] = field(default_factory=dict)
    """Session id → (prefix length, prefix digest, ctime, when recorded, line number → entry)."""
    fresh: dict[str, Journal] = field(default_factory=dict)
    """What the current replay read (saved in place of ``journals``)."""
    hits: int = 0
    """Lines taken from the cache by this replay (for tests and tracing)."""
    changed: bool = False

    def _scope(self) -> bytes:
        return f"{VERSION}\n{int(oscompat.is_windows())}\n".encode()

    def _seal(self, body: bytes) -> bytes:
        return hashlib.blake2b(self._scope() + body, key=self.key[:64], digest_size=32).digest()

    @classmethod
    def load(cls, path: Path, key: bytes | None, legacy: bool) -> LineCache:
        """The cache at ``path`` if its seal verifies under ``key``; an empty one otherwise."""
        cache = cls(path, (key or b"no key") + (b"\x01" if legacy else b"\x00"))
        try:
            data = path.read_bytes()
        except OSError:
            return cache
        try:
            if not data.startswith(_MAGIC):
                raise ValueError("not a history-lines cache")
            seal, body = data[len(_MAGIC) : len(_MAGIC) + 32], data[len(_MAGIC) + 32 :]
            if not hmac.compare_digest(seal, cache._seal(body)):
                raise ValueError("seal mismatch (damaged, forged, or another key)")
            raw = marshal.loads(body)
            if not isinstance(raw, dict) or not all(
                isinstance(s, str) and isinstance(v, tuple) and len(v) == 5 for s, v in raw.items()
            ):
                raise TypeError("malformed body")
            cache.journals = raw
        except (ValueError, TypeError, EOFError) as exc:
            log.info("history-lines cache %s ignored (%s): parsed from the journals", path, exc)
        return cache

    def usable(self, sid: str, seen: Seen) -> bool:
        """Whether the entries of journal ``sid`` may stand for its lines (module contract)."""
        got = self.journals.get(sid)
        if got is None or seen.prefix is None or (got[0], got[1]) != seen.prefix:
            return False
        return seen.hashed or (got[2] == seen.ctime_ns and got[3] - got[2] > CTIME_RACY_NS)

    def lookup(self, sid: str, seen: Seen, number: int) -> CachedLine | None:
        """The cached result for line ``number`` of journal ``sid`` (call only when
        :meth:`usable`); a hit is kept for the prefix the index records now."""
        entry = self.journals[sid][4].get(number)
        if entry is None:
            return None
        try:
            cp_raw, delta_raw, snapshot, seq, bad, copy_raw = entry
            if not isinstance(copy_raw, bytes | None) or not isinstance(seq, int | None):
                raise TypeError("malformed entry")
            line = CachedLine(
                Checkpoint.model_validate_json(cp_raw),
                _delta_in(delta_raw),
                snapshot,
                seq,
                [(str(p), str(w)) for p, w in bad],
                copy_raw,
            )
        except (ValueError, TypeError, KeyError):  # ValidationError is a ValueError
            return None
        self.hits += 1
        self._keep(sid, seen, number, entry)
        return line

    def remember(self, sid: str, seen: Seen, number: int, line: CachedLine) -> None:
        """Keep what replay made of line ``number`` of ``sid`` for the next open, when the line
        lies inside the prefix the index now records."""
        copy = line.copy_raw
        try:
            entry: Entry = (
                line.cp.model_dump_json(by_alias=True, exclude_unset=True).encode(),
                _delta_out(line.delta),
                line.snapshot,
                line.seq,
                list(line.bad_paths),
                None if copy is None else copy if isinstance(copy, bytes) else json.dumps(copy).encode(),
            )
        except (ValueError, TypeError):  # a name that is not UTF-8 (a lone surrogate): not cached
            return
        self.changed |= self._keep(sid, seen, number, entry)

    def _keep(self, sid: str, seen: Seen, number: int, entry: Entry) -> bool:
        size, digest, newlines = seen.now
        if number > newlines:
            return False  # not newline-terminated yet (the index does not vouch for it)
        cur = self.fresh.get(sid)
        if cur is None:
            old = self.journals.get(sid)
            same = old is not None and old[:3] == (size, digest, seen.ctime_ns)
            if old is not None and same and old[3] - old[2] > CTIME_RACY_NS:
                cur = self.fresh[sid] = (*old[:4], {})  # the same journal, recorded when not racy
            else:
                cur = self.fresh[sid] = (size, digest, seen.ctime_ns, seen.read_ns, {})
                self.changed = True
        cur[4][number] = entry
        return True

    def save(self) -> None:
        """Write what this replay read, when it differs from what was loaded (failures are
        logged: it is only a cache)."""
        if self.path is None or (not self.changed and self.fresh.keys() == self.journals.keys()):
            return
        body = marshal.dumps(self.fresh)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(_MAGIC + self._seal(body) + body)
            tmp.replace(self.path)
        except (OSError, ValueError) as exc:
            log.warning("history-lines cache %s not written: %s", self.path, exc)
            tmp.unlink(missing_ok=True)
            return
        self.journals, self.changed = self.fresh, False
