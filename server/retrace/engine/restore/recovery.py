"""Crash safety of restores: a journaled intent before the first file changes, a ``restoreDone``
after the outcome, and on the next start the rollback of any restore a crash interrupted.

Contract: :func:`begin_restore` is called with the pre-restore state fully recorded (the head,
right after a safety checkpoint) and before anything is written; :func:`end_restore` once the
outcome is known. The engine's disk restore does both itself; a caller that applies a plan some
other way (the server, through the editor) calls them around its own apply.

A writer's open runs :func:`recover_interrupted_restores` BEFORE its catch-up capture (so a
half-applied restore is never recorded as an external change): an intent with neither
``restoreDone`` nor its committed restore checkpoint has its paths put back to the pre-restore
head by the disk transaction itself (never through ``Engine.restore``): each path is rewritten
from the store or removed, temporary files of the killed apply are deleted. A restore is thus
applied fully or not at all, whoever was applying it when the process died.

The engine is reached only through :class:`RecoveryPort` (no import of the engine module).
"""

from __future__ import annotations

import contextlib
import secrets
import stat
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, FileEntry, RestorePlan
from retrace.engine.restore.disk import apply_disk
from retrace.engine.restore.ops import DiskOp, Seen
from retrace.engine.store.events import (
    EventModel,
    JournalEvent,
    RestoreDoneEvent,
    RestoreIntentEvent,
)
from retrace.engine.workspace import DirTree, EscapeError, is_temp_name

LEGACY_TEMP_PREFIX = ".retrace-"
"""Temporary files of the applier before ``.rt-`` names (stores written by older versions)."""


class RecoveryPort(Protocol):
    """What recovery needs from the engine."""

    workspace: Path
    store_dir: Path

    @property
    def head(self) -> Checkpoint: ...

    def append_event(
        self, event: JournalEvent, *, session_id: str | None = None, durable: bool = True
    ) -> None: ...

    def sessions(self) -> list[str]: ...

    def events(
        self, session_id: str | None = None, *, only: Collection[EventModel] | None = None
    ) -> Iterator[JournalEvent]: ...

    def timeline(self, session_id: str | None = None) -> list[Checkpoint]: ...

    def manifest(self, cp_id: str) -> dict[str, FileEntry]: ...

    def read_blob(self, blob_id: str) -> bytes: ...


def begin_restore(engine: RecoveryPort, plan: RestorePlan) -> str:
    """Journal the intent to change ``plan``'s paths (the head is the pre-restore state)."""
    restore_id = secrets.token_hex(8)
    paths = sorted({pf.path for pf in plan.files} | {pf.from_path for pf in plan.files if pf.from_path})
    engine.append_event(
        RestoreIntentEvent(
            restore_id=restore_id, pre_head=engine.head.id, target_id=plan.target_id, paths=paths
        )
    )
    return restore_id


def end_restore(engine: RecoveryPort, restore_id: str, outcome: str) -> None:
    """Close the intent. An ``applied`` close needs no fsync of its own: the restore checkpoint
    committed (durably) just before it proves the restore finished, and recovery treats an
    intent followed by its committed checkpoint as done. Any other outcome is synced: losing
    it would make the next open roll back files the user may have changed since."""
    engine.append_event(
        RestoreDoneEvent(restore_id=restore_id, outcome=outcome), durable=outcome != "applied"
    )


def _is_stray(name: str) -> bool:
    return (name.startswith(".rt-") and name.endswith(".tmp")) or (
        name.startswith(LEGACY_TEMP_PREFIX) and name.endswith(".tmp")
    )


def remove_stray_temp_files(workspace: Path, paths: list[str]) -> None:
    """Delete the temporary files a killed apply left in the directories of ``paths`` (never
    through a symlinked directory)."""
    dirs = {p.rpartition("/")[0] for p in paths}
    with DirTree(workspace) as tree:
        for rel_dir in sorted(dirs):
            try:
                d = tree.directory(rel_dir)
                names = tree.fs.listdir(d)
            except (OSError, EscapeError):
                continue
            for name in names:
                if not _is_stray(name):
                    continue
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(tree.fs.lstat(d, name).st_mode):
                        tree.fs.unlink(d, name)


def remove_stray_trash(workspace: Path) -> None:
    """Delete the workspace trash directories (``.rt-<8 hex>.trash`` at the root, never a link)
    a killed apply left: called once its restore was rolled back from the store, so what they
    hold is either back in place or the version the pre-restore checkpoint recorded."""
    with DirTree(workspace) as tree:
        d = tree.directory("")
        for name in tree.fs.listdir(d):
            if not (is_temp_name(name) and name.endswith(".trash")):
                continue
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(tree.fs.lstat(d, name).st_mode):
                    tree.fs.remove_tree(d, name)


RestoreEvents = Mapping[str, Iterable[RestoreIntentEvent | RestoreDoneEvent]]
"""Session id → its valid ``restoreIntent``/``restoreDone`` events in journal order."""


def _pending(engine: RecoveryPort, restore_events: RestoreEvents | None) -> dict[str, RestoreIntentEvent]:
    intents: dict[str, RestoreIntentEvent] = {}
    done: set[str] = set()
    journals: Iterable[Iterable[JournalEvent]] = (
        (restore_events[sid] for sid in sorted(restore_events))
        if restore_events is not None
        else (engine.events(sid, only=(RestoreIntentEvent, RestoreDoneEvent)) for sid in engine.sessions())
    )
    for events in journals:
        for event in events:
            if isinstance(event, RestoreIntentEvent):
                intents[event.restore_id] = event
            elif isinstance(event, RestoreDoneEvent):
                done.add(event.restore_id)
    return {rid: intent for rid, intent in intents.items() if rid not in done}


def _rollback_ops(engine: RecoveryPort, pre_head: str, paths: list[str]) -> list[DiskOp]:
    """Operations that put ``paths`` back to ``pre_head``, whatever is on disk now."""
    manifest = engine.manifest(pre_head)
    ops: list[DiskOp] = []
    anything = Seen(None, anything=True)
    for rel in paths:
        want = manifest.get(rel)
        if want is None:
            ops.append(DiskOp(rel, "delete", None, anything))
            continue
        digest = want.hash
        if want.kind == "file" and digest is None:
            continue  # never stored: nothing to put back (and nothing was taken from it)
        source = (lambda d=digest: engine.read_blob(d)) if want.kind == "file" and digest else None
        ops.append(DiskOp(rel, "write", want, anything, source=source, replace_directory=True))
    return ops


def _roll_back(
    engine: RecoveryPort, rid: str, intent: RestoreIntentEvent, position: dict[str, int]
) -> str | None:
    target, pre_head, paths = intent.target_id, intent.pre_head, intent.paths
    if pre_head not in position:
        return None
    timeline = engine.timeline()
    after = timeline[position[pre_head] + 1 :]
    if any(cp.kind == "restore" and cp.restored_from == target for cp in after):
        end_restore(engine, rid, "applied")  # committed before the crash: only restoreDone was missing
        return None
    rels = [str(p) for p in paths]
    remove_stray_temp_files(engine.workspace, rels)
    try:
        ops = _rollback_ops(engine, pre_head, rels)
    except RetraceError as exc:
        return f"an interrupted restore of {target} could not be rolled back: {exc}"
    result = apply_disk(engine.workspace, engine.store_dir / "trash" / f"recovery-{rid}", ops)
    if not result.ok:
        return f"an interrupted restore of {target} could not be rolled back: {result.error}"
    remove_stray_trash(engine.workspace)
    end_restore(engine, rid, "rolledBack")
    return f"an interrupted restore of {target} was rolled back ({len(rels)} path(s), to {pre_head})"


def recover_interrupted_restores(
    engine: RecoveryPort, restore_events: RestoreEvents | None = None
) -> list[str]:
    """Roll back every restore a crash interrupted (an intent without ``restoreDone`` and without
    its committed restore checkpoint): its paths go back to the pre-restore head. Returns one
    line per restore handled. Idempotent: a crash during the rollback redoes it next time.

    ``restore_events``: the restore events of every journal when the caller already read them
    (the engine's open: replay did), instead of reading every journal again."""
    pending = _pending(engine, restore_events)
    if not pending:
        return []
    position = {cp.id: index for index, cp in enumerate(engine.timeline())}
    report: list[str] = []
    for rid, intent in pending.items():
        line = _roll_back(engine, rid, intent, position)
        if line is not None:
            report.append(line)
    return report
