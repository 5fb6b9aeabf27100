"""Subagent stores (``<store>/tasks/<task id>/``) in retention and in the storage figure.

A ``task`` call's child agent keeps its workspace copy and its own Retrace store under
``<store>/tasks/<task id>/`` (:mod:`retrace.agent.subagents.layout`). Retention (``retrace gc``,
*Retrace: Collect Garbage*, the automatic cleanup) runs :func:`collect_tasks` after the main
store's collection:

* **What "still needed" means** (:func:`decide`, pure, table-tested), in this order:

  1. an entry that is not a real folder (a symbolic link named like a task folder, a file,
     anything else) is reported and skipped: never followed, never deleted, never counted;
  2. ``.drop-<id>`` — a folder an interrupted drop renamed — is dropped (finishing that drop);
  3. a folder no journal's ``task`` event names is reported and left alone (not Retrace's to
     judge: the user may remove it by hand);
  4. a child whose last ``task`` event says ``running`` is kept (a live child, or one crash
     resume will mark ``interrupted``);
  5. a child whose parent checkpoints still point at it is kept: the parent checkpoint it started
     from (``base``) or the checkpoint of its ``task`` call is still in the parent's history
     (the row that opens its timeline, the point a restore goes back to);
  6. a child that ended (any other status, ``discarded`` included) less than ``maxAgeDays`` ago
     is kept; older ones are dropped whole.

* A kept child's own store is collected by the same rules as the main store (its engine opened
  on its own copy; one that is running — locked —, damaged (any problem its replay reports: an
  unreadable line, a bad seal) or forged is reported and skipped).
* Dropping: ``lstat`` says a real folder (not a link), it is renamed to ``.drop-<id>`` inside
  ``tasks/`` (so a crash leaves a name rule 2 finishes), then removed by ``shutil.rmtree``, which
  unlinks links instead of following them (descriptor-based where the platform offers it). A
  ``tasks`` that is itself a link is never entered.
* What ``tasks/`` holds is read by :mod:`retrace.engine.store.task_dirs` (``scan``,
  ``tasks_bytes``: the subagents' part of the storage figure; real folders only, links not
  followed).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from retrace.agent.subagents.topology import fold
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.errors import RetraceError
from retrace.engine.models import GcReport
from retrace.engine.store.events import TaskEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.task_dirs import TaskDir, folder_bytes, scan, tasks_root

log = logging.getLogger(__name__)

DROP_PREFIX = ".drop-"
Verdict = Literal["keep", "drop", "skip"]


@dataclass(frozen=True)
class Decision:
    name: str
    verdict: Verdict
    why: str


@dataclass
class TaskGc:
    """What :func:`collect_tasks` did."""

    dropped: list[str] = field(default_factory=list)
    bytes_freed: int = 0
    checkpoints_dropped: int = 0
    """Inside kept children's own stores."""
    notes: list[str] = field(default_factory=list)
    """Entries reported and skipped (links, files, unknown folders, stores that failed)."""


def decide(
    dirs: list[TaskDir],
    tasks: Mapping[str, TaskEvent],
    live: Set[str],
    *,
    now: float,
    max_age_days: float,
) -> list[Decision]:
    """The verdict on every entry of ``tasks/`` (the rules in the module docstring). ``tasks``:
    each child's last ``task`` event by task id; ``live``: the parent's checkpoint ids and the
    tool-call ids of its checkpoints."""
    cutoff = now - max_age_days * 86400
    out: list[Decision] = []
    for d in dirs:
        out.append(Decision(d.name, *_verdict(d, tasks.get(d.name), live, cutoff)))
    return out


def _verdict(d: TaskDir, task: TaskEvent | None, live: Set[str], cutoff: float) -> tuple[Verdict, str]:
    if d.kind == "link":
        return "skip", "a link named like a subagent store: not followed, left alone"
    if d.kind != "dir":
        return "skip", "not a folder: left alone"
    if d.name.startswith(DROP_PREFIX):
        return "drop", "left by an interrupted drop"
    if task is None:
        return "skip", "no journal names this subagent: left alone"
    return _task_verdict(task, live, cutoff)


def _task_verdict(task: TaskEvent, live: Set[str], cutoff: float) -> tuple[Verdict, str]:
    if task.status == "running":
        return "keep", "its subagent is running"
    if (task.base is not None and task.base in live) or task.call_id in live:
        return "keep", "its parent's checkpoints still point at it"
    if task.ts >= cutoff:
        return "keep", "it ended within the retention window"
    return "drop", f"it ended ({task.status}) before the retention window"


def remove(layout: StoreLayout, name: str) -> int:
    """Drop one task folder safely (see the module docstring); its bytes. Refuses anything but a
    real folder directly under a real ``tasks/``."""
    root = tasks_root(layout)
    if root is None or "/" in name or os.sep in name or name in ("", ".", ".."):
        raise RetraceError(f"not a subagent store: {name!r}")
    path = os.path.join(root, name)  # noqa: PTH118
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise RetraceError(f"not a folder, left alone: {path}")
    size = folder_bytes(path)
    if not name.startswith(DROP_PREFIX):
        moved = os.path.join(root, DROP_PREFIX + name)  # noqa: PTH118
        os.rename(path, moved)  # noqa: PTH104
        path = moved
    shutil.rmtree(path)
    return size


def task_events(engine: Engine) -> dict[str, TaskEvent]:
    """Each child's last ``task`` event over every session journal of the store."""
    out: dict[str, TaskEvent] = {}
    for sid in engine.sessions():
        out.update(fold(engine.events(sid, only=(TaskEvent,))))
    return out


def live_points(engine: Engine) -> set[str]:
    """The parent's checkpoint ids and their tool-call ids (what a child may be pointed at by)."""
    out: set[str] = set()
    for cp in engine.timeline():
        out.add(cp.id)
        if cp.tool_call_id:
            out.add(cp.tool_call_id)
    return out


def collect_tasks(engine: Engine, *, now: float | None = None) -> TaskGc:
    """Retention over the subagent stores of ``engine``'s store (run after its own collection,
    in the engine's gate): drop what :func:`decide` says, collect the kept children's stores."""
    layout = StoreLayout(engine.store_dir)
    dirs, notes = scan(layout, sizes=False)
    report = TaskGc(notes=list(notes))
    if not dirs:
        return report
    policy = engine.config.retention
    decisions = decide(
        dirs,
        task_events(engine),
        live_points(engine),
        now=time.time() if now is None else now,
        max_age_days=policy.max_age_days,
    )
    for d in decisions:
        if d.verdict == "skip":
            report.notes.append(f"tasks/{d.name}: {d.why}")
        elif d.verdict == "drop":
            _drop(layout, d, report)
        elif d.why != "its subagent is running":
            _collect_child(engine, layout, d.name, report)
    return report


def collect_all(engine: Engine) -> GcReport:
    """The whole collection: the main store (``Engine.gc``), then its subagent stores; one report."""
    report = engine.gc()
    tasks = collect_tasks(engine)
    return report.model_copy(
        update={
            "checkpoints_dropped": report.checkpoints_dropped + tasks.checkpoints_dropped,
            "bytes_freed": report.bytes_freed + tasks.bytes_freed,
            "subagent_stores_dropped": len(tasks.dropped),
            "notes": [*report.notes, *tasks.notes],
        }
    )


def _drop(layout: StoreLayout, d: Decision, report: TaskGc) -> None:
    try:
        report.bytes_freed += remove(layout, d.name)
    except (OSError, RetraceError) as exc:
        report.notes.append(f"tasks/{d.name}: not dropped ({exc})")
        return
    report.dropped.append(d.name)
    log.info("retention: dropped subagent store tasks/%s (%s)", d.name, d.why)


def _collect_child(engine: Engine, layout: StoreLayout, name: str, report: TaskGc) -> None:
    """The child's own store, collected by the main store's rules (its lock held meanwhile)."""
    root = Path(layout.tasks) / name
    store, work = root / "store", root / "work"
    if not (_real_dir(store) and _real_dir(work)):
        return  # nothing of a store here (a discarded child's leftovers are judged by age)
    config = EngineConfig(watcher=False, retention=engine.config.retention)
    try:
        with Engine.open(work, store, config=config, create=False, catch_up=False) as child:
            if child.problems:  # damage is `retrace verify --repair`'s to move, never gc's
                report.notes.append(
                    f"tasks/{name}: its store is damaged, not collected ({child.problems[0]})"
                )
                return
            child_report = child.gc()
    except (RetraceError, OSError, ValueError) as exc:
        report.notes.append(f"tasks/{name}: its store was not collected ({exc})")
        return
    report.checkpoints_dropped += child_report.checkpoints_dropped
    report.bytes_freed += child_report.bytes_freed


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def due(engine: Engine, *, now: float | None = None) -> bool:
    """Would :func:`collect_tasks` drop a subagent store now (cheap: no size walk)."""
    layout = StoreLayout(engine.store_dir)
    dirs, _ = scan(layout, sizes=False)
    if not dirs:
        return False
    decisions = decide(
        dirs,
        task_events(engine),
        live_points(engine),
        now=time.time() if now is None else now,
        max_age_days=engine.config.retention.max_age_days,
    )
    return any(d.verdict == "drop" for d in decisions)
