"""THE place where a restore's conflicts are resolved (pure: a plan and the user's choices in,
a decision out). Both appliers — the disk applier and the editor applier — act on its result.

Rules, per conflicting file, first match wins:

1. an explicit per-path resolution (``overwrite``, ``skip``, ``merge``);
2. ``force`` → ``overwrite``;
3. ``skip_conflicts`` → ``skip``;
4. otherwise the file stays a conflict and nothing is applied.

``merge`` needs the clean merged text the plan carries; without it the file stays a conflict
(or, with ``skip_conflicts``, is skipped). Files that are not conflicts are always applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from retrace.engine.models import ConflictResolution, FileOutcome, PlannedFile, RestorePlan

SKIPPED_DETAIL = "kept the current file"


@dataclass
class Resolution:
    chosen: dict[str, ConflictResolution] = field(default_factory=dict)
    """Resolution of every conflicting path that will be acted on (``skip`` included)."""
    unresolved: list[FileOutcome] = field(default_factory=list)
    """Conflicts nobody resolved: when non-empty, nothing may be applied."""
    skipped: list[str] = field(default_factory=list)
    """Paths left as they are on disk (resolved ``skip``)."""

    def action(self, planned: PlannedFile) -> ConflictResolution | None:
        """``None`` for a plain planned change, else the resolution of the conflict."""
        return self.chosen.get(planned.path) if planned.action == "conflict" else None


def _pick(
    planned: PlannedFile, force: bool, resolutions: Mapping[str, ConflictResolution], skip_conflicts: bool
) -> ConflictResolution | None:
    explicit = resolutions.get(planned.path)
    if explicit is not None:
        return explicit
    if force:
        return "overwrite"
    return "skip" if skip_conflicts else None


def resolve(
    plan: RestorePlan,
    *,
    force: bool = False,
    resolutions: Mapping[str, ConflictResolution] | None = None,
    skip_conflicts: bool = False,
) -> Resolution:
    out = Resolution()
    chosen = resolutions or {}
    for f in plan.files:
        if f.action != "conflict":
            continue
        assert f.conflict is not None
        res = _pick(f, force, chosen, skip_conflicts)
        detail = f.conflict.detail
        if res == "merge" and f.conflict.merged_text is None:
            detail = f"{detail}; no clean merge exists"
            res = "skip" if skip_conflicts else None
        if res is None:
            out.unresolved.append(
                FileOutcome(path=f.path, action="conflict", status="conflict", detail=detail)
            )
            continue
        out.chosen[f.path] = res
        if res == "skip":
            out.skipped.append(f.path)
    return out
