"""The one conflict-resolution rule, table-tested (both appliers act on its result)."""

from __future__ import annotations

import pytest

from retrace.engine.models import (
    ConflictInfo,
    ConflictResolution,
    FileEntry,
    PlanCounts,
    PlannedFile,
    RestorePlan,
)
from retrace.engine.restore.resolver import resolve

ENTRY = FileEntry(kind="file", hash="ab" * 32, size=1)


def conflict(path: str, merged: str | None = None) -> PlannedFile:
    return PlannedFile(
        path=path,
        action="conflict",
        current=ENTRY,
        target=ENTRY,
        intended="overwrite",
        conflict=ConflictInfo(reason="unsaved", detail="unsaved changes in the editor", merged_text=merged),
    )


PLAN = RestorePlan(
    target_id="t",
    head_id="h",
    mode="code",
    files=[
        conflict("a"),
        conflict("m", merged="merged\n"),
        PlannedFile(path="plain", action="overwrite", current=ENTRY, target=ENTRY),
    ],
    counts=PlanCounts(overwrite=1, conflict=2),
)

R = dict[str, ConflictResolution]

CASES: list[tuple[str, bool, R, bool, dict[str, str], list[str], list[str]]] = [
    # name, force, resolutions, skip_conflicts -> chosen, unresolved, skipped
    ("nothing chosen", False, {}, False, {}, ["a", "m"], []),
    ("force overwrites all", True, {}, False, {"a": "overwrite", "m": "overwrite"}, [], []),
    ("explicit wins over force", True, {"a": "skip"}, False, {"a": "skip", "m": "overwrite"}, [], ["a"]),
    ("skip conflicts", False, {}, True, {"a": "skip", "m": "skip"}, [], ["a", "m"]),
    ("empty resolutions + skip", False, {}, True, {"a": "skip", "m": "skip"}, [], ["a", "m"]),
    ("merge where clean", False, {"m": "merge"}, True, {"a": "skip", "m": "merge"}, [], ["a"]),
    (
        "merge without text stays a conflict",
        False,
        {"a": "merge", "m": "merge"},
        False,
        {"m": "merge"},
        ["a"],
        [],
    ),
    ("merge without text + skip", False, {"a": "merge"}, True, {"a": "skip", "m": "skip"}, [], ["a", "m"]),
    ("partial resolutions", False, {"a": "overwrite"}, False, {"a": "overwrite"}, ["m"], []),
]


@pytest.mark.parametrize(
    ("force", "resolutions", "skip", "chosen", "unresolved", "skipped"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_resolve_table(
    force: bool, resolutions: R, skip: bool, chosen: dict[str, str], unresolved: list[str], skipped: list[str]
) -> None:
    got = resolve(PLAN, force=force, resolutions=resolutions, skip_conflicts=skip)
    assert got.chosen == chosen
    assert [o.path for o in got.unresolved] == unresolved
    assert got.skipped == skipped
    assert got.action(PLAN.files[2]) is None, "a plain planned change is never a resolution"
    if "a" in unresolved and resolutions.get("a") == "merge":
        assert "no clean merge" in (got.unresolved[0].detail or "")
