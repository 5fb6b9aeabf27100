"""The ONE outcome ladder of a restore, shared by both appliers (the disk applier in
:mod:`retrace.engine.restore.restorer` and the editor applier in the server): from a plan and
the user's choices to either a finished outcome or the steps to apply. Pure (no I/O).

Rungs, first match wins:

1. nothing planned (no file, nothing unrecoverable) → ``nothingToRestore``;
2. a conflict nobody resolved (:func:`~retrace.engine.restore.resolver.resolve`) → ``conflict``;
3. a dry run → ``preview`` (per-file outcomes, skipped paths);
4. nothing to apply and something unrecoverable → ``failed`` (rolled back: nothing changed);
5. nothing to apply (every change skipped) → ``nothingToRestore``;
6. otherwise → :class:`ToApply`: the applier applies ``steps``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from retrace.engine.models import (
    ConflictResolution,
    NothingToRestore,
    RestoreConflict,
    RestoreFailed,
    RestoreOutcome,
    RestorePlan,
    RestorePreview,
)
from retrace.engine.restore.ops import Seen
from retrace.engine.restore.resolver import Resolution, resolve
from retrace.engine.restore.steps import ContentReader, Steps, build_steps


@dataclass(frozen=True)
class Choices:
    """What the user asked for, beside the plan."""

    dry_run: bool = False
    force: bool = False
    resolutions: Mapping[str, ConflictResolution] | None = None
    skip_conflicts: bool = False
    scoped: bool = False
    """The restore was limited to some paths (said in "already matches")."""


@dataclass
class ToApply:
    """Rung 6: the plan resolved into steps an applier performs."""

    decision: Resolution
    steps: Steps


def climb(
    plan: RestorePlan, choices: Choices, seen: Mapping[str, Seen], read: ContentReader
) -> RestoreOutcome | ToApply:
    """The outcome of ``plan`` under ``choices`` when it ends before any write, else the steps."""
    target_id, mode = plan.target_id, plan.mode
    if not plan.files and not plan.unrecoverable:
        return NothingToRestore(
            target_id=target_id,
            mode=mode,
            dry_run=choices.dry_run,
            plan=plan,
            reason=f"the workspace already matches checkpoint {target_id}"
            + (" for the given paths" if choices.scoped else ""),
        )
    decision = resolve(
        plan, force=choices.force, resolutions=choices.resolutions, skip_conflicts=choices.skip_conflicts
    )
    if decision.unresolved:
        return RestoreConflict(
            target_id=target_id, mode=mode, dry_run=choices.dry_run, plan=plan, files=decision.unresolved
        )
    steps = build_steps(plan, decision, seen, read)
    if choices.dry_run:
        return RestorePreview(
            target_id=target_id, mode=mode, plan=plan, files=steps.outcomes, skipped=decision.skipped
        )
    failed = [o for o in steps.outcomes if o.status == "failed"]
    if not steps.ops and failed:
        return RestoreFailed(
            target_id=target_id,
            mode=mode,
            plan=plan,
            files=steps.outcomes,
            rolled_back=True,
            error="nothing could be restored: " + "; ".join(f"{o.path}: {o.detail}" for o in failed),
        )
    if not steps.ops:
        return NothingToRestore(
            target_id=target_id,
            mode=mode,
            plan=plan,
            files=steps.outcomes,
            skipped=decision.skipped,
            reason="every change in scope was skipped",
        )
    return ToApply(decision, steps)
