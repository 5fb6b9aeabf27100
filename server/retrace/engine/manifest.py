"""Manifests (workspace-relative POSIX path → :class:`FileEntry`) and their compact JSON form.

A checkpoint stores only its DELTA (path → entry, or ``None`` for a deletion) in its journal
line; full manifest snapshots are blobs written at the baseline and every
:func:`needs_snapshot` says so along an ancestry, so any checkpoint's manifest is the nearest
snapshot plus a bounded number of deltas. Entries are built with ``model_construct`` on the hot
paths. What is read back from the store is untrusted (a damaged or forged journal line, a
snapshot from a shared bucket): :func:`stored_delta` and :func:`decode_snapshot` check every
path with the one workspace rule (:func:`~retrace.engine.workspace.stored_rel`) and every entry's
fields before anything is built from them.
"""

from __future__ import annotations

import json
import sys
from bisect import bisect_left, insort
from collections.abc import Callable, Collection
from typing import Any, Literal

from retrace.engine.models import FileEntry
from retrace.engine.workspace import EscapeError, stored_rel
from retrace.oscompat import ignores_case

Manifest = dict[str, FileEntry]
Delta = dict[str, FileEntry | None]

SNAPSHOT_EVERY = 200
"""Minimum replay cost (checkpoints + delta entries since the last snapshot along an ancestry)
before a new snapshot is written; the threshold grows with the manifest (a quarter of it), so
writing snapshots stays a small fraction of capture work and replaying never costs more than
a quarter of a full manifest."""


def needs_snapshot(cost: int, manifest_size: int) -> bool:
    return cost >= max(SNAPSHOT_EVERY, manifest_size // 4)


def entry_to_json(e: FileEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": e.kind, "hash": e.hash, "size": e.size}
    if e.executable:
        out["executable"] = True
    if e.target is not None:
        out["target"] = e.target
    if e.unstored is not None:
        out["unstored"] = e.unstored
    return out


_FIELDS_SET = set(FileEntry.model_fields)
"""Every entry built here shares this one "fields set" (all fields are set). Pydantic only
ever adds a field name to it (already present: a no-op) or copies it, so sharing is safe, and
a 50k-file manifest saves 50k sets (about 13 MiB)."""
_new = FileEntry.__new__
_set = object.__setattr__


def make_entry(
    kind: Literal["file", "symlink"],
    hash_: str | None,
    size: int,
    *,
    executable: bool = False,
    target: str | None = None,
    unstored: str | None = None,
) -> FileEntry:
    """A FileEntry without validation. Equivalent to ``model_construct`` (same instance state)
    at a third of its cost: a 50k-file manifest is built on every open."""
    e = _new(FileEntry)
    _set(
        e,
        "__dict__",
        {
            "kind": kind,
            "hash": hash_,
            "size": size,
            "executable": executable,
            "target": target,
            "unstored": unstored,
        },
    )
    _set(e, "__pydantic_fields_set__", _FIELDS_SET)
    _set(e, "__pydantic_extra__", None)
    _set(e, "__pydantic_private__", None)
    return e


def entry_from_json(d: dict[str, Any]) -> FileEntry:
    return make_entry(
        d["kind"],
        d.get("hash"),
        d.get("size", 0),
        executable=d.get("executable", False),
        target=d.get("target"),
        unstored=d.get("unstored"),
    )


def same(a: FileEntry | None, b: FileEntry | None) -> bool:
    """Same content and mode (what a restore must reproduce)."""
    if a is None or b is None:
        return a is b
    if a.kind != b.kind or a.executable != b.executable:
        return False
    if a.kind == "symlink":
        return a.target == b.target
    if a.hash is None or b.hash is None:
        # Unstored content: the best we can compare is the size and the reason.
        return a.hash is None and b.hash is None and a.size == b.size
    return a.hash == b.hash


def same_content(a: FileEntry | None, b: FileEntry | None) -> bool:
    """Same bytes (or link target), ignoring the executable bit."""
    if a is None or b is None:
        return a is b
    if a.kind != b.kind:
        return False
    if a.kind == "symlink":
        return a.target == b.target
    return a.hash is not None and a.hash == b.hash


def delta_to_json(delta: Delta) -> dict[str, Any]:
    return {p: (entry_to_json(e) if e is not None else None) for p, e in delta.items()}


def delta_from_json(d: dict[str, Any]) -> Delta:
    return {p: (entry_from_json(e) if e is not None else None) for p, e in d.items()}


_HEX = "0123456789abcdef"
_HEX_BYTES = _HEX.encode()


def fields_problem(row: tuple[object, object, object, object, object, object]) -> str | None:
    """Why stored entry fields ``(kind, hash, size, executable, target, unstored)`` cannot
    describe a file or symlink (``None``: they can). Decides in one expression on the hot path."""
    kind, h, size, x, target, unstored = row
    if (
        (kind == "file" or (kind == "symlink" and type(target) is str))
        and (h is None or (type(h) is str and len(h) == 64 and not h.strip(_HEX)))
        and type(size) is int
        and size >= 0
        and (type(x) is bool or x in (0, 1))
        and (target is None or type(target) is str)
        and (unstored is None or type(unstored) is str)
    ):
        return None
    reasons = [
        (kind not in ("file", "symlink"), f"an entry of unknown kind {kind!r}"),
        (
            h is not None and not (type(h) is str and len(h) == 64 and not h.strip(_HEX)),
            "a content hash that is not a blob id",
        ),
        (type(size) is not int or size < 0, "a size that is not a byte count"),
        (type(x) is not bool and x not in (0, 1), "an executable flag that is not a boolean"),
        (True, "a symlink target or unstored reason that is not a string"),
    ]
    return next(why for failed, why in reasons if failed)


def stored_delta(d: dict[str, Any]) -> tuple[Delta, list[tuple[str, str]]]:
    """A delta read back from a journal line: the entries that pass the path rule and the entry
    checks, and ``(path, why)`` for each one that does not (dropped: damage, never applied)."""
    out: Delta = {}
    bad: list[tuple[str, str]] = []
    for p, e in d.items():
        try:
            stored_rel(p)
        except EscapeError as exc:
            bad.append((p, str(exc)))
            continue
        if e is None:
            out[p] = None
            continue
        if type(e) is dict and e.get("kind") == "file" and len(e) <= 6:  # the common case, inline
            h, size = e.get("hash"), e.get("size", 0)
            if (
                (h is None or (type(h) is str and len(h) == 64 and not h.strip(_HEX)))
                and type(size) is int
                and size >= 0
                and e.get("executable", False) in {False, True}
                and e.get("target") is None
                and (e.get("unstored") is None or type(e.get("unstored")) is str)
            ):
                out[p] = entry_from_json(e)
                continue
        problem = (
            fields_problem(
                (
                    e.get("kind"),
                    e.get("hash"),
                    e.get("size", 0),
                    e.get("executable", False),
                    e.get("target"),
                    e.get("unstored"),
                )
            )
            if isinstance(e, dict)
            else "an entry that is not an object"
        )
        if problem is not None:
            bad.append((p, f"{p!r}: {problem}"))
            continue
        out[p] = entry_from_json(e)
    return out, bad


def encode_snapshot(m: Manifest) -> bytes:
    """JSON rows ``[path, kind, hash, size, executable, target, unstored]`` sorted by path:
    arrays decode several times faster than objects, and a 50k-file snapshot is read on open."""
    rows = [
        [p, e.kind, e.hash, e.size, 1 if e.executable else 0, e.target, e.unstored]
        for p, e in sorted(m.items())
    ]
    return json.dumps(rows, separators=(",", ":"), ensure_ascii=True).encode()


def decode_snapshot(data: bytes) -> Manifest:
    raw = json.loads(data)
    if isinstance(raw, dict):  # the first snapshot format: {path: entry-json}
        delta, bad = stored_delta(raw)
        if bad or any(e is None for e in delta.values()):
            raise ValueError(f"manifest snapshot holds a bad entry: {bad[0][1] if bad else 'a deletion'}")
        return {p: e for p, e in delta.items() if e is not None}
    # make_entry inlined: this loop builds every entry of a 50k-file manifest on open. The checks
    # are the cheap common case inline (a plain file), the hash digits and the paths in bulk after.
    out: Manifest = {}
    hashes: list[str] = []
    new, setattr_, fields = _new, _set, _FIELDS_SET
    for p, kind, h, size, x, target, unstored in raw:
        if not (
            kind == "file"
            and type(h) is str
            and len(h) == 64
            and type(size) is int
            and size >= 0
            and x in {0, 1}
            and target is None
            and unstored is None
        ):
            _slow_row_check(p, (kind, h, size, x, target, unstored))
        if h is not None:
            hashes.append(h)
        e = new(FileEntry)
        setattr_(
            e,
            "__dict__",
            {
                "kind": kind,
                "hash": h,
                "size": size,
                "executable": bool(x),
                "target": target,
                "unstored": unstored,
            },
        )
        setattr_(e, "__pydantic_fields_set__", fields)
        setattr_(e, "__pydantic_extra__", None)
        setattr_(e, "__pydantic_private__", None)
        out[p] = e
    if not _all_hex("".join(hashes)):
        raise ValueError("manifest snapshot holds a content hash that is not a blob id")
    _check_paths(out)
    return out


def _all_hex(text: str) -> bool:
    try:
        return not text.encode("ascii").translate(None, _HEX_BYTES)
    except UnicodeEncodeError:
        return False


def _slow_row_check(p: object, row: tuple[object, object, object, object, object, object]) -> None:
    problem = fields_problem(row)
    if problem is not None:
        raise ValueError(f"manifest snapshot entry {p!r}: {problem}")


def _check_paths(paths: Collection[str]) -> None:
    """Every path passes :func:`stored_rel`, or ``ValueError``. In the common case the joined
    paths are searched once for what only a failing path holds (an empty path or component, a
    leading or trailing slash, NUL) and only paths with a component starting with ``.`` are
    checked one by one (a ``.``, ``..`` or ``.git`` component): a false alarm checks them all,
    a failing path is never missed."""
    try:
        joined = "\n".join(paths)
    except TypeError:
        joined = ""
    if (
        not joined
        or ignores_case()
        or sys.platform == "win32"
        or any(mark in joined for mark in ("//", "\x00", "\n\n", "\n/", "/\n"))
        or joined.startswith(("/", "\n"))
        or joined.endswith(("/", "\n"))
    ):
        suspects = list(paths)
    else:
        suspects = [p for p in paths if p[:1] == "." or "/." in p]
    for p in suspects:
        try:
            stored_rel(p)
        except EscapeError as exc:
            raise ValueError(f"manifest snapshot holds a path outside the workspace: {exc}") from None


def diff_manifests(old: Manifest, new: Manifest) -> Delta:
    """Delta turning ``old`` into ``new``."""
    out: Delta = {}
    for p, e in new.items():
        if not same(old.get(p), e):
            out[p] = e
    for p in old:
        if p not in new:
            out[p] = None
    return out


class DirIndex:
    """A manifest's paths in sorted order, so "was this missing path a directory of tracked
    files?" and "which tracked files are under it?" cost a binary search plus the size of that
    subtree instead of a scan of the whole manifest (an ``rm -r`` in a shell call).

    Built on first use from ``source()`` (the engine's current head): a warm open that never
    needs it does not pay for it. Until then :meth:`apply` has nothing to do, because the
    source already includes every applied delta when the index is built."""

    def __init__(self, m: Manifest | None = None, *, source: Callable[[], Manifest] | None = None) -> None:
        self._source = source if m is None else (lambda: m)
        self._paths: list[str] | None = None
        if m is not None:
            self._index()

    def _index(self) -> list[str]:
        if self._paths is None:
            assert self._source is not None
            self._paths = sorted(self._source())
        return self._paths

    def apply(self, before: Manifest, delta: Delta) -> None:
        """Update for ``delta`` being applied to ``before`` (call before applying it)."""
        paths = self._paths
        if paths is None:
            return
        for p, e in delta.items():
            was = p in before
            if e is None and was:
                i = bisect_left(paths, p)
                if i < len(paths) and paths[i] == p:
                    del paths[i]
            elif e is not None and not was:
                insort(paths, p)

    def _range(self, d: str) -> tuple[int, int]:
        # Paths starting with "d/" are contiguous and sort between "d/" and "d0" ("0" follows "/").
        paths = self._index()
        return bisect_left(paths, d + "/"), bisect_left(paths, d + "0")

    def has(self, d: str) -> bool:
        lo, hi = self._range(d)
        return bool(d) and lo < hi

    def files_under(self, d: str) -> list[str]:
        """Every indexed path below directory ``d``."""
        lo, hi = self._range(d)
        return self._index()[lo:hi]
