"""From a resolved plan to disk operations, per-file outcomes and the resulting entries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry, FileOutcome, PlannedFile, RestorePlan
from retrace.engine.restore.ops import DiskOp, Seen
from retrace.engine.restore.resolver import SKIPPED_DETAIL, Resolution
from retrace.engine.store.blobs import blob_id

ContentReader = Callable[[FileEntry], bytes | None]


@dataclass
class Steps:
    ops: list[DiskOp] = field(default_factory=list)
    outcomes: list[FileOutcome] = field(default_factory=list)
    result: dict[str, FileEntry | None] = field(default_factory=dict)
    """Path → entry once applied (``None``: deleted): the restore checkpoint's delta."""
    new_blobs: list[tuple[bytes, str]] = field(default_factory=list)
    """Content that exists in no checkpoint yet (merges): stored before the apply."""


def _seen(seen: Mapping[str, Seen], pf: PlannedFile, path: str) -> Seen:
    return seen.get(path) or Seen(pf.current if path == pf.path else None)


def _content_op(pf: PlannedFile, tgt: FileEntry, seen: Seen, read: ContentReader, force_dir: bool) -> DiskOp:
    source = (lambda: read(tgt)) if tgt.kind == "file" else None
    return DiskOp(pf.path, "write", tgt, seen, source=source, replace_directory=force_dir)


def _one(
    steps: Steps, pf: PlannedFile, res: str | None, seen: Mapping[str, Seen], read: ContentReader
) -> None:
    here = _seen(seen, pf, pf.path)
    if res == "skip":
        detail = f"{SKIPPED_DETAIL} ({pf.conflict.detail})" if pf.conflict else SKIPPED_DETAIL
        steps.outcomes.append(FileOutcome(path=pf.path, action=pf.action, status="skipped", detail=detail))
        return
    if res == "merge":
        assert pf.conflict is not None and pf.conflict.merged_text is not None and pf.current is not None
        data = pf.conflict.merged_text.encode()
        entry = make_entry("file", blob_id(data), len(data), executable=pf.current.executable)
        steps.new_blobs.append((data, blob_id(data)))
        steps.ops.append(DiskOp(pf.path, "write", entry, here, source=lambda: data))
        steps.result[pf.path] = entry
        steps.outcomes.append(FileOutcome(path=pf.path, action=pf.action, status="merged"))
        return
    action = pf.intended if pf.action == "conflict" else pf.action
    tgt = pf.target
    if action == "delete" or tgt is None:
        steps.ops.append(DiskOp(pf.path, "delete", None, here))
        steps.result[pf.path] = None
    elif action == "chmod":
        steps.ops.append(DiskOp(pf.path, "chmod", tgt, here))
        steps.result[pf.path] = tgt
    else:
        steps.ops.append(_content_op(pf, tgt, here, read, force_dir=res == "overwrite"))
        steps.result[pf.path] = tgt
        if action == "rename" and pf.from_path:
            steps.ops.append(DiskOp(pf.from_path, "delete", None, _seen(seen, pf, pf.from_path)))
            steps.result[pf.from_path] = None
    steps.outcomes.append(FileOutcome(path=pf.path, action=pf.action, status="restored"))


def build_steps(
    plan: RestorePlan, resolution: Resolution, seen: Mapping[str, Seen], read: ContentReader
) -> Steps:
    """Disk operations for every planned file the resolution lets through (each path once)."""
    steps = Steps()
    for pf in plan.files:
        _one(steps, pf, resolution.action(pf), seen, read)
    for u in plan.unrecoverable:
        steps.outcomes.append(
            FileOutcome(path=u.path, action="overwrite", status="failed", detail=f"not restored: {u.reason}")
        )
    return steps
