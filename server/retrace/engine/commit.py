"""The one commit path: what a captured delta becomes as a checkpoint.

Every checkpoint (baseline, tool, external, safety, restore, manual, summary) is built here from
the delta against the head: its per-file changes with line statistics (bounded by a time
budget), and what it can honestly promise (``recoverability``): every file whose content was
not stored and every directory the capture could not list is named, and such a checkpoint is
never ``full``. A baseline is the same commit with no parent, the whole manifest as its delta
and no per-file list (it is the starting point, not a change).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from retrace.engine.manifest import Delta, same
from retrace.engine.models import (
    Checkpoint,
    CheckpointKind,
    FileChange,
    FileEntry,
    Recoverability,
    Unrecoverable,
)
from retrace.engine.stats import LineStats, line_stats

LINE_STATS_BUDGET_S = 0.025
"""Time a commit may spend counting +/- lines; beyond it, changes are listed without counts."""

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


def file_changes(
    old: Mapping[str, FileEntry | None],
    new: Delta,
    *,
    content: ContentReader,
    disk: DiskReader | None = None,
    budget_s: float | None = None,
) -> tuple[list[FileChange], int]:
    """FileChanges for paths going from ``old[p]`` to ``new[p]``, pairing renames, and how many
    were listed without line counts. ``disk``: the new side is the workspace (read through it;
    its content may not be stored yet). ``budget_s``: stop counting lines after this long so a
    huge shell change cannot stall a capture."""
    omitted = 0
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    renamed = _pair_renames(old, new)
    gone = set(renamed.values())
    out: list[FileChange] = []
    for p in sorted(new):
        o, n = old.get(p), new[p]
        if same(o, n) or (n is None and p in gone):
            continue
        if p in renamed:
            out.append(FileChange(path=p, status="renamed", old_path=renamed[p]))
            continue
        status = "added" if o is None else "deleted" if n is None else "modified"
        if deadline is not None and time.perf_counter() > deadline:
            omitted += 1
            out.append(FileChange(path=p, status=status, approximate=True))
            continue
        stats = (
            line_stats(content(o), disk(p) if disk is not None else content(n), deadline=deadline)
            if ((o is None or o.kind == "file") and (n is None or n.kind == "file"))
            else LineStats(0, 0, False)
        )
        out.append(
            FileChange(
                path=p,
                status=status,
                additions=stats.additions,
                deletions=stats.deletions,
                binary=stats.binary,
                approximate=stats.approximate,
            )
        )
    return out, omitted


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
        files, omitted = file_changes(old, delta, content=content, budget_s=LINE_STATS_BUDGET_S)
        if omitted:
            meta = {**(meta or {}), "lineStatsOmitted": omitted}
    level, unrec = recoverability(delta, missed, baseline=baseline)
    editor_state = fields.pop("editor_state", None)
    return Checkpoint(
        id=cid,
        parent=parent,
        session_id=session_id,
        kind=kind,
        created_at=datetime.now(UTC),
        files=files,
        recoverability=level,
        unrecoverable=unrec,
        editor_state=dict(editor_state) if editor_state is not None else None,
        capture_ms=round(capture_ms, 3),
        meta=dict(meta or {}),
        **fields,
    )
