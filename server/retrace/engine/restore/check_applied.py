"""Verification of a restore someone else applied (the editor): what is on disk now against
what the resolved plan promised, per file. Pure: captured entries in, outcomes out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from retrace.engine.manifest import same
from retrace.engine.models import ConflictResolution, FileEntry, FileOutcome, PlannedFile, RestorePlan
from retrace.engine.restore.resolver import SKIPPED_DETAIL
from retrace.engine.store.blobs import blob_id


@dataclass
class Verified:
    outcomes: list[FileOutcome] = field(default_factory=list)
    expected: dict[str, FileEntry | None] = field(default_factory=dict)
    """Path → the entry that is (correctly) there now."""
    bad: list[str] = field(default_factory=list)


def _fail(out: Verified, f: PlannedFile, why: str) -> None:
    out.bad.append(f"{f.path}: {why}")
    out.outcomes.append(FileOutcome(path=f.path, action=f.action, status="failed", detail=why))


def _merged(out: Verified, f: PlannedFile, got: FileEntry | None) -> None:
    text = f.conflict.merged_text if f.conflict else None
    if text is None:
        _fail(out, f, "no merged text")
    elif got is None or got.hash != blob_id(text.encode()):
        _fail(out, f, "does not contain the merged text")
    else:
        out.expected[f.path] = got
        out.outcomes.append(FileOutcome(path=f.path, action=f.action, status="merged"))


def _why(f: PlannedFile, got: FileEntry | None, captured: Mapping[str, FileEntry | None]) -> str | None:
    want = f.target
    if f.from_path and captured.get(f.from_path) is not None:
        return f"{f.from_path} still exists after the rename"
    symlink_ok = want is not None and got is not None and want.kind == "symlink" and got.target == want.target
    if same(got, want) or symlink_ok:
        return None
    if got is None:
        return "is absent"
    return "still exists" if want is None else "differs from the checkpoint"


def verify_applied(
    plan: RestorePlan,
    chosen: Mapping[str, ConflictResolution],
    captured: Mapping[str, FileEntry | None],
) -> Verified:
    out = Verified()
    for f in plan.files:
        res = chosen.get(f.path, "overwrite") if f.action == "conflict" else None
        if res == "skip":
            detail = f"{SKIPPED_DETAIL} ({f.conflict.detail})" if f.conflict else SKIPPED_DETAIL
            out.outcomes.append(FileOutcome(path=f.path, action=f.action, status="skipped", detail=detail))
            continue
        got = captured.get(f.path)
        if res == "merge":
            _merged(out, f, got)
            continue
        why = _why(f, got, captured)
        if why is not None:
            _fail(out, f, why)
            continue
        out.expected[f.path] = f.target
        if f.from_path:
            out.expected[f.from_path] = None
        out.outcomes.append(FileOutcome(path=f.path, action=f.action, status="restored"))
    for u in plan.unrecoverable:
        out.outcomes.append(
            FileOutcome(path=u.path, action="overwrite", status="failed", detail=f"not restored: {u.reason}")
        )
    return out
