"""The one commit path: what a captured delta becomes as a checkpoint.

Every checkpoint (baseline, tool, external, safety, restore, manual, summary) is built here from
the delta against the head: its per-file changes with line statistics, and what it can honestly
promise (``recoverability``): every file whose content was
not stored and every directory the capture could not list is named, and such a checkpoint is
never ``full``. A baseline is the same commit with no parent, the whole manifest as its delta
and no per-file list (it is the starting point, not a change).

Line statistics stay off the commit path of any change bigger than a small edit: a commit
counts lines only when the WHOLE change is small — at most :data:`COMMIT_COUNT_BYTES` of
content (old and new sides together, every file at most :data:`COMMIT_COUNT_FILE_BYTES`), within
:data:`LINE_STATS_BUDGET_S` — and otherwise counts none of it: every file is listed with
``counted=False`` (no numbers, not zeros) and counted when someone asks (:func:`count_lines`,
bounded per request: the timeline's checkpoint details, the file history). Counting part of a
big change (the first files that fit) cost a real-code checkpoint up to the whole budget and
still left the change "not counted yet" in every display.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from retrace.engine.clock import utc_now
from retrace.engine.line_stats import LineStats, line_stats
from retrace.engine.manifest import Delta, delta_to_json, same
from retrace.engine.models import (
    Checkpoint,
    CheckpointKind,
    FileChange,
    FileEntry,
    FileStatus,
    Recoverability,
    Unrecoverable,
)
from retrace.engine.store.events import ParentCopy

LINE_STATS_BUDGET_S = 0.025
"""Time a commit may spend counting +/- lines; beyond it, changes are listed without counts."""
COMMIT_COUNT_BYTES = 64 * 1024
"""Content (old + new sides, all files) a commit may read to count lines: a real-code change
of a hundred files must cost about what hashing and storing it costs, not a diff of each."""
COMMIT_COUNT_FILE_BYTES = 16 * 1024
"""Largest file (old + new side) counted on the commit path; larger ones are counted lazily."""
COUNT_LINES_BUDGET_S = 0.25
"""Time one :func:`count_lines` request may spend; files left over stay ``counted=False``."""

ContentReader = Callable[[FileEntry | None], bytes | None]
DiskReader = Callable[[str], bytes | None]


def _pair_renames(old: Mapping[str, FileEntry | None], new: Delta) -> dict[str, str]:
    """Added path → deleted path with the same content (a rename)."""
    added = [p for p, e in new.items() if e is not None and old.get(p) is None]
    by_hash: dict[str, list[str]] = {}
    for p, e in new.items():
        o = old.get(p)
        if e is None and o is not None and o.hash is not None:
            by_hash.setdefault(o.hash, []).append(p)
    renamed: dict[str, str] = {}
    for p in added:
        e = new[p]
        assert e is not None
        srcs = by_hash.get(e.hash or "", [])
        if e.hash is not None and srcs:
            renamed[p] = srcs.pop(0)
    return renamed


def _cost(o: FileEntry | None, n: FileEntry | None) -> int:
    """Bytes that counting the lines of ``o`` → ``n`` reads."""
    return (o.size if o is not None else 0) + (n.size if n is not None else 0)


def _counted_change(p: str, status: FileStatus, stats: LineStats) -> FileChange:
    return FileChange(
        path=p,
        status=status,
        additions=stats.additions,
        deletions=stats.deletions,
        binary=stats.binary,
        approximate=stats.approximate,
    )


def _stats(
    o: FileEntry | None, n: FileEntry | None, old: bytes | None, new: bytes | None, deadline: float | None
) -> LineStats:
    if (o is None or o.kind == "file") and (n is None or n.kind == "file"):
        return line_stats(old, new, deadline=deadline)
    return LineStats(0, 0, False)


def _fits(old: Mapping[str, FileEntry | None], new: Delta, paths: list[str], max_bytes: int) -> bool:
    """Whether counting the lines of all ``paths`` reads at most ``max_bytes`` (and no file
    more than :data:`COMMIT_COUNT_FILE_BYTES`): a small edit, counted at once."""
    total = 0
    for p in paths:
        cost = _cost(old.get(p), new[p])
        total += cost
        if cost > COMMIT_COUNT_FILE_BYTES or total > max_bytes:
            return False
    return True


def file_changes(
    old: Mapping[str, FileEntry | None],
    new: Delta,
    *,
    content: ContentReader,
    disk: DiskReader | None = None,
    budget_s: float | None = None,
    max_bytes: int | None = None,
) -> tuple[list[FileChange], int]:
    """FileChanges for paths going from ``old[p]`` to ``new[p]``, pairing renames, and how many
    were listed without line counts (``counted=False``). ``disk``: the new side is the
    workspace (read through it; its content may not be stored yet). ``budget_s``: stop counting
    lines after this long so a huge shell change cannot stall a capture. ``max_bytes``: count
    only a change whose content is at most this much (and no file above
    :data:`COMMIT_COUNT_FILE_BYTES`); a bigger one is listed uncounted, whole."""
    omitted = 0
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    renamed = _pair_renames(old, new)
    gone = set(renamed.values())
    changed = [p for p in sorted(new) if not same(old.get(p), new[p]) and not (new[p] is None and p in gone)]
    small = max_bytes is None or _fits(old, new, [p for p in changed if p not in renamed], max_bytes)
    out: list[FileChange] = []
    for p in changed:
        o, n = old.get(p), new[p]
        if p in renamed:
            out.append(FileChange(path=p, status="renamed", old_path=renamed[p]))
            continue
        status: FileStatus = "added" if o is None else "deleted" if n is None else "modified"
        if not small or (deadline is not None and time.perf_counter() > deadline):
            omitted += 1
            out.append(FileChange(path=p, status=status, counted=False))
            continue
        new_bytes = disk(p) if disk is not None else content(n)
        out.append(_counted_change(p, status, _stats(o, n, content(o), new_bytes, deadline)))
    return out, omitted


def count_lines(
    files: list[FileChange],
    before: Mapping[str, FileEntry | None],
    after: Mapping[str, FileEntry | None],
    *,
    content: ContentReader,
    budget_s: float | None = None,
) -> list[FileChange]:
    """``files`` with the changes left uncounted at commit time counted now (``before`` /
    ``after``: the entries on each side). Bounded: past ``budget_s`` the rest stay uncounted,
    and one file's diff is cut at the same deadline (its counts then say ``approximate``).
    Default budget: :data:`COUNT_LINES_BUDGET_S`."""
    deadline = time.perf_counter() + (COUNT_LINES_BUDGET_S if budget_s is None else budget_s)
    out: list[FileChange] = []
    for f in files:
        if f.counted or time.perf_counter() > deadline:
            out.append(f)
            continue
        o, n = before.get(f.path), after.get(f.path)
        out.append(_counted_change(f.path, f.status, _stats(o, n, content(o), content(n), deadline)))
    return out


def recoverability(
    delta: Delta, missed: list[Unrecoverable], *, baseline: bool
) -> tuple[Recoverability, list[Unrecoverable]]:
    """What restoring this checkpoint can bring back: ``full`` only when every changed file's
    content is stored and nothing was left out of the capture."""
    unrec = [
        Unrecoverable(path=p, reason=e.unstored or "content not stored")
        for p, e in sorted(delta.items())
        if e is not None and e.kind == "file" and e.hash is None
    ]
    changed = sum(1 for e in delta.values() if e is not None)
    level: Recoverability
    if not unrec and not missed:
        level = "full"
    elif unrec and not baseline and len(unrec) == changed and not any(e is None for e in delta.values()):
        level = "none"
    else:
        level = "partial"
    return level, unrec + missed


def build_checkpoint(
    *,
    cid: str,
    parent: str | None,
    session_id: str,
    kind: CheckpointKind,
    delta: Delta,
    old: Mapping[str, FileEntry | None],
    content: ContentReader,
    missed: list[Unrecoverable],
    meta: Mapping[str, Any] | None = None,
    capture_ms: float = 0.0,
    **fields: Any,
) -> Checkpoint:
    """The checkpoint recording ``delta`` (paths whose entries differ from ``old``)."""
    baseline = kind == "baseline"
    files: list[FileChange] = []
    if not baseline:
        files, omitted = file_changes(
            old, delta, content=content, budget_s=LINE_STATS_BUDGET_S, max_bytes=COMMIT_COUNT_BYTES
        )
        if omitted:
            meta = {**(meta or {}), "lineStatsOmitted": omitted}
    level, unrec = recoverability(delta, missed, baseline=baseline)
    editor_state = fields.pop("editor_state", None)
    return Checkpoint(
        id=cid,
        parent=parent,
        session_id=session_id,
        kind=kind,
        created_at=utc_now(),
        files=files,
        recoverability=level,
        unrecoverable=unrec,
        editor_state=dict(editor_state) if editor_state is not None else None,
        capture_ms=round(capture_ms, 3),
        meta=dict(meta or {}),
        **fields,
    )


def parent_copy(parent: Checkpoint | None, delta: Delta | None, snapshot: str | None) -> ParentCopy | None:
    """What a new checkpoint's journal line carries of its ``parent`` (whose own delta and
    snapshot blob id are given) so the parent's manifest survives damage to the parent's line:
    the snapshot id when it has one (a few bytes), else its delta (a child line then holds two
    small deltas). ``None`` for a baseline."""
    if parent is None or (delta is None and snapshot is None):
        return None
    return ParentCopy(
        id=parent.id,
        parent=parent.parent,
        kind=parent.kind,
        created_at=parent.created_at.isoformat(),
        delta=None if snapshot is not None or delta is None else delta_to_json(delta),
        snapshot=snapshot,
    )
