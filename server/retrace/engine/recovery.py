"""Crash safety of restores: a journaled intent before the first file changes, a ``restoreDone``
after the outcome, and on the next start the rollback of any restore a crash interrupted.

Contract: :func:`begin_restore` is called with the pre-restore state fully recorded (the head,
right after a safety checkpoint) and before anything is written; :func:`end_restore` once the
outcome is known. ``Engine.restore`` does both itself; a caller that applies a plan some other
way (the server, through the editor) calls them around its own apply. A writer ``Engine.open``
runs :func:`recover_interrupted_restores` before returning: an intent with neither
``restoreDone`` nor its committed restore checkpoint has its paths put back to the pre-restore
head, so a restore is applied fully or not at all, whoever was applying it when the process died.
"""

from __future__ import annotations

import glob
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrace.engine.errors import RetraceError
from retrace.engine.models import RestorePlan
from retrace.engine.store.events import RestoreDoneEvent, RestoreIntentEvent

if TYPE_CHECKING:
    from retrace.engine.engine import Engine


def begin_restore(engine: Engine, plan: RestorePlan) -> str:
    """Journal the intent to change ``plan``'s paths (the head is the pre-restore state)."""
    restore_id = secrets.token_hex(8)
    paths = sorted({pf.path for pf in plan.files} | {pf.from_path for pf in plan.files if pf.from_path})
    engine.append_event(
        RestoreIntentEvent(
            restore_id=restore_id, pre_head=engine.head.id, target_id=plan.target_id, paths=paths
        )
    )
    return restore_id


def end_restore(engine: Engine, restore_id: str, outcome: str) -> None:
    engine.append_event(RestoreDoneEvent(restore_id=restore_id, outcome=outcome))


def remove_stray_temp_files(workspace: Path, paths: list[str]) -> None:
    """Delete the temporary files a killed disk apply left next to ``paths`` (the applier writes
    ``.retrace-<pid>-<tag>-<name>.tmp`` beside each file, then renames it into place)."""
    for rel in paths:
        target = workspace / rel
        for stray in target.parent.glob(f".retrace-*-{glob.escape(target.name)}.tmp"):
            if stray.is_file() and not stray.is_symlink():
                stray.unlink(missing_ok=True)


def recover_interrupted_restores(engine: Engine) -> list[str]:
    """Roll back every restore a crash interrupted (an intent without ``restoreDone`` and without
    its committed restore checkpoint): its paths go back to the pre-restore head. Returns one
    line per restore handled. Idempotent: a crash during the rollback redoes it next time."""
    intents: dict[str, dict[str, Any]] = {}
    done: set[str] = set()
    for session_id in engine.sessions():
        for event in engine.events(session_id):
            kind = event.get("type")
            if kind == "restoreIntent" and isinstance(event.get("restoreId"), str):
                intents[event["restoreId"]] = event
            elif kind == "restoreDone":
                done.add(str(event.get("restoreId")))
    pending = {rid: intent for rid, intent in intents.items() if rid not in done}
    if not pending:
        return []
    timeline = engine.timeline()
    position = {cp.id: index for index, cp in enumerate(timeline)}
    report: list[str] = []
    for rid, intent in pending.items():
        target, pre_head, paths = intent.get("targetId"), intent.get("preHead"), intent.get("paths")
        if not isinstance(pre_head, str) or not isinstance(paths, list) or pre_head not in position:
            continue
        after = timeline[position[pre_head] + 1 :]
        if any(cp.kind == "restore" and cp.restored_from == target for cp in after):
            end_restore(engine, rid, "applied")  # committed before the crash: only restoreDone was missing
            continue
        remove_stray_temp_files(engine.workspace, [str(p) for p in paths])
        try:
            outcome = engine.restore(pre_head, mode="code", force=True, paths=[str(p) for p in paths])
        except RetraceError as exc:
            report.append(f"an interrupted restore of {target} could not be rolled back: {exc}")
            continue
        if outcome.kind in ("applied", "nothingToRestore"):
            end_restore(engine, rid, "rolledBack")
            report.append(
                f"an interrupted restore of {target} was rolled back ({len(paths)} path(s), to {pre_head})"
            )
        else:
            report.append(f"an interrupted restore of {target} could not be rolled back: {outcome.kind}")
    return report
