"""Restore orchestration: plan a restore from the engine's history, resolve conflicts, apply it
to disk (or accept one the editor applied) inside a :class:`RestoreTransaction`, and commit the
``restore`` checkpoint.

The engine is reached only through :class:`RestoreHost` (no import of the engine module), so
this room depends on history and capture through a narrow, named surface. The transaction
contract is in :mod:`retrace.engine.restore.transaction`.
"""

# String paths and os-level calls on purpose: one stat per planned path.
# ruff: noqa: PTH118

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from retrace.engine.capture import Ignorer, kept_by_rules
from retrace.engine.capture.scan import read_entry
from retrace.engine.changes import read_disk
from retrace.engine.errors import RetraceError, StoreCorrupt
from retrace.engine.models import (
    Checkpoint,
    ConflictResolution,
    FileEntry,
    FileOutcome,
    KeptPath,
    NothingToRestore,
    RestoreApplied,
    RestoreConflict,
    RestoreFailed,
    RestoreMode,
    RestoreOutcome,
    RestorePlan,
)
from retrace.engine.restore.check_applied import verify_applied
from retrace.engine.restore.disk import apply_disk
from retrace.engine.restore.entries import blocking_ancestor
from retrace.engine.restore.ladder import Choices, ToApply, climb
from retrace.engine.restore.ops import ApplyResult, Seen
from retrace.engine.restore.planner import PathState, dir_emptied_by, plan_restore
from retrace.engine.restore.steps import Steps
from retrace.engine.restore.transaction import RestoreHost, RestoreTransaction
from retrace.engine.store.events import RestoreStatsEvent
from retrace.engine.workspace import DirTree, EscapeError, Identity

DAMAGED = "stored content is damaged or missing"
"""Start of a restore outcome's detail when a file's recorded bytes cannot be read intact."""

EXTERNAL_KINDS = frozenset({"external", "safety", "background"})
"""Checkpoint kinds whose changes were not made by the agent's own tool calls (restore treats them
as foreign work). ``background``: what a background command changed, captured at a turn boundary
together with anything the user changed meanwhile (the two cannot be told apart), so a restore
asks before overwriting it."""


class RestoreOptions(TypedDict, total=False):
    """Keyword options of a disk restore (see :meth:`Restorer.restore`)."""

    mode: str
    dry_run: bool
    force: bool
    resolutions: Mapping[str, ConflictResolution] | None
    paths: Iterable[str] | None
    skip_conflicts: bool


class AppliedRestoreOptions(TypedDict, total=False):
    """Keyword options of an editor-applied restore (see :meth:`Restorer.commit_applied`)."""

    resolutions: Mapping[str, ConflictResolution] | None
    editor_state: Mapping[str, Any] | None
    conversation: str | None
    transaction: RestoreTransaction | None


def restore_mode(mode: str) -> RestoreMode:
    """``mode`` checked against the three restore modes."""
    if mode not in ("code", "conversation", "both"):
        raise RetraceError(f"unknown restore mode {mode!r} (expected code, conversation or both)")
    return mode  # type: ignore[return-value]


class Restorer:
    """Restore orchestration over a :class:`RestoreHost`. Not thread-safe (as the engine)."""

    def __init__(self, host: RestoreHost) -> None:
        self._host = host

    # ------------------------------------------------------------------ planning
    def plan(self, cp_id: str, *, mode: str = "code", paths: Iterable[str] | None = None) -> RestorePlan:
        """Pure plan (reads only): what restoring ``cp_id`` would change, with conflicts."""
        return self._plan_seen(self._host.get(cp_id), restore_mode(mode), paths)[0]

    def _plan_seen(
        self, target: Checkpoint, mode: RestoreMode, paths: Iterable[str] | None
    ) -> tuple[RestorePlan, dict[str, Seen]]:
        """The plan, and what it saw on disk per path (stat identity: the apply's CAS guard)."""
        host = self._host
        head_id = host.head.id
        scope = host.changed_between(target.id, head_id)
        if paths is not None:
            wanted = {host.rel(p) for p in paths}
            scope = {p for p in scope if p in wanted or any(p.startswith(w + "/") for w in wanted)}
        tgt = host.entries_at(target.id, scope)
        kept = self._kept_by_rules(target, sorted(scope))
        scope -= kept.keys()
        current, seen = self._read_current(scope, tgt)
        head = host.head_manifest
        states: dict[str, PathState] = {}
        for p in scope:
            cur, err = current[p]
            ext, base = self._foreign_base(p)
            states[p] = PathState(
                target=tgt[p], head=head.get(p), current=cur, current_error=err, external=ext, base=base
            )
        plan = plan_restore(
            target_id=target.id,
            head_id=head_id,
            mode=mode,
            states=states,
            read_blob=host.content,
            read_disk=lambda rel: read_disk(host.workspace, rel, host.config.max_file_bytes),
        )
        plan.kept = [KeptPath(path=p, reason=r) for p, r in sorted(kept.items())]
        return plan, seen

    def _foreign_base(self, path: str) -> tuple[bool, FileEntry | None]:
        """Whether the last change of ``path`` was foreign work, and the entry before it."""
        prov = self._host.last_change(path)
        if prov is None or prov.kind not in EXTERNAL_KINDS:
            return False, None
        return True, self._host.entries_at(prov.parent, [path])[path] if prov.parent else None

    def _kept_by_rules(self, target: Checkpoint, paths: list[str]) -> dict[str, str]:
        """Planned changes the restore must not make: a path ignored now or at the target was
        not tracked content at that end, so it is neither deleted, overwritten nor created."""
        if not paths:
            return {}
        host = self._host
        cap = host.capturer
        now = cap.ignorer if cap is not None else Ignorer(host.workspace, host.config)
        if cap is None or not cap.rules_current():
            now.forget()  # rules as they are on disk right now

        # Every ``.gitignore`` the target's rules can come from (those of the paths' ancestor
        # directories), looked up in ONE walk of the history rather than one walk per directory.
        at_target = host.entries_at(target.id, _gitignores_above(paths))

        def gitignore_at_target(dir_rel: str) -> bytes | None:
            rel = f"{dir_rel}/.gitignore" if dir_rel else ".gitignore"
            e = at_target[rel] if rel in at_target else host.entries_at(target.id, [rel])[rel]
            return host.content(e) if e is not None and e.kind == "file" else None

        return kept_by_rules(paths, now, Ignorer(host.workspace, host.config, gitignore_at_target))

    def _read_current(
        self, rels: Iterable[str], targets: Mapping[str, FileEntry | None]
    ) -> tuple[dict[str, tuple[FileEntry | None, str | None]], dict[str, Seen]]:
        out: dict[str, tuple[FileEntry | None, str | None]] = {}
        seen: dict[str, Seen] = {}
        rels = list(rels)
        workspace = self._host.workspace
        cap = self._host.capturer
        unchanged = cap.unchanged_test() if cap is not None else None
        head = self._host.head_manifest
        with DirTree(workspace) as tree:
            for rel in rels:
                try:
                    st = tree.lstat(rel)
                except (EscapeError, NotADirectoryError):
                    # Behind a file or a symlink: nothing of the workspace is there. Creating it
                    # means replacing that entry: a conflict unless the plan deletes it anyway.
                    blocker = blocking_ancestor(tree, rel)
                    blocked = targets.get(rel) is not None and (blocker not in targets or targets[blocker])
                    out[rel] = (None, f"{blocker} is a file or a link in the way" if blocked else None)
                    seen[rel] = Seen(None)
                    continue
                except OSError as exc:
                    out[rel] = (None, exc.strerror or str(exc))
                    continue
                if st is None:
                    out[rel] = (None, None)
                    seen[rel] = Seen(None)
                    continue
                ident = Identity.of(st)
                if stat.S_ISDIR(st.st_mode):
                    # Nothing to do when the target has nothing there either; else it is in the
                    # way unless the plan's deletes empty it.
                    emptied = targets.get(rel) is None or dir_emptied_by(workspace, rel, rels, targets)
                    out[rel] = (None, None if emptied else "a directory with untracked files is in the way")
                    seen[rel] = Seen(None, ident, directory=True)
                    continue
                he = head.get(rel)
                if unchanged is not None and he is not None and _agrees(he, st) and unchanged(rel):
                    entry: FileEntry | None = he  # the watcher saw nothing touch it since the head
                else:
                    entry = self._current_entry(rel, st)
                out[rel] = (entry, None)
                seen[rel] = Seen(entry, ident)
        return out, seen

    def _current_entry(self, rel: str, st: os.stat_result) -> FileEntry | None:
        host = self._host
        if host.capturer is not None:
            # The stat cache vouches for unchanged files (racily clean ones are re-read).
            return host.capturer.peek(rel, st, host.head_manifest.get(rel))
        r = read_entry(os.path.join(host.workspace, rel), st, host.config.max_file_bytes)
        return r.entry if r else None

    # ------------------------------------------------------------------ disk restore
    def restore(
        self,
        cp_id: str,
        *,
        mode: str = "code",
        dry_run: bool = False,
        force: bool = False,
        resolutions: Mapping[str, ConflictResolution] | None = None,
        paths: Iterable[str] | None = None,
        skip_conflicts: bool = False,
    ) -> RestoreOutcome:
        """See :meth:`retrace.engine.engine.Engine.restore`."""
        t0 = time.perf_counter()
        m = restore_mode(mode)
        target = self._host.get(cp_id)
        if m == "conversation":
            return NothingToRestore(
                target_id=target.id,
                mode=m,
                dry_run=dry_run,
                reason="code unchanged (conversation-only restore)",
            )
        if not dry_run:
            self._host.require_writer()
        try:
            plan, seen = self._plan_seen(target, m, paths)
            outcome = self._decide_and_apply(
                target,
                plan,
                seen,
                dry_run=dry_run,
                force=force,
                resolutions=dict(resolutions or {}),
                scoped=paths is not None,
                skip_conflicts=skip_conflicts,
            )
        except StoreCorrupt as exc:
            # Met while planning, before any file changed: name what cannot be restored.
            why = f"checkpoint {target.id} cannot be restored, nothing was changed: {exc}"
            raise StoreCorrupt(why) from exc
        if dry_run:
            return outcome
        if outcome.kind == "nothingToRestore":
            # The disk already matches the target, possibly through changes nobody recorded (a
            # file the user deleted that the agent had created): record them, so the head
            # describes the disk as after any restore.
            self._host.record_foreign("external", {"label": f"changes found when restoring {target.id}"})
        else:
            self._record_restore(t0, outcome)
        return outcome

    def _record_restore(self, t0: float, outcome: RestoreOutcome) -> None:
        """The ``restore`` statistics event. Not fsynced on its own: it is informational, and
        the next durable append flushes it (a crash can lose it, never tear the journal)."""
        ms = (time.perf_counter() - t0) * 1000
        cp = outcome.checkpoint if isinstance(outcome, RestoreApplied) else None
        event = RestoreStatsEvent(
            duration_ms=round(ms, 3),
            kind=outcome.kind,
            target_id=outcome.target_id,
            mode=outcome.mode,
            checkpoint_id=cp.id if cp is not None else None,
            conflicts=conflict_endings(outcome.files),
        )
        self._host.journal_writer().append(event, sync=False)

    def _decide_and_apply(
        self,
        target: Checkpoint,
        plan: RestorePlan,
        seen: dict[str, Seen],
        *,
        dry_run: bool,
        force: bool,
        resolutions: Mapping[str, ConflictResolution],
        scoped: bool,
        skip_conflicts: bool,
    ) -> RestoreOutcome:
        choices = Choices(
            dry_run=dry_run,
            force=force,
            resolutions=resolutions,
            skip_conflicts=skip_conflicts,
            scoped=scoped,
        )
        rung = climb(plan, choices, seen, self._host.content)
        if not isinstance(rung, ToApply):
            return rung
        return self._apply_steps(target, plan, rung.steps, rung.decision.skipped)

    @staticmethod
    def _never_stored(steps: Steps) -> list[tuple[str, str]]:
        """Writes whose content was never stored. (Stored content is verified as it is read
        during the apply, not read twice: a missing or damaged blob there rolls everything
        back, see :func:`_apply_failure`.)"""
        return [
            (op.path, f"{DAMAGED}: never stored ({e.unstored or 'unknown reason'})")
            for op in steps.ops
            if op.kind == "write" and (e := op.entry) is not None and e.kind == "file" and e.hash is None
        ]

    def _apply_steps(
        self, target: Checkpoint, plan: RestorePlan, steps: Steps, skipped: list[str]
    ) -> RestoreOutcome:
        host = self._host
        cap = host.capturer
        assert cap is not None
        mode = plan.mode
        damaged = self._never_stored(steps)
        if damaged:
            # A restore that cannot get every byte changes nothing.
            return RestoreFailed(
                target_id=target.id,
                mode=mode,
                plan=plan,
                files=[
                    FileOutcome(path=p, action="overwrite", status="failed", detail=why) for p, why in damaged
                ],
                rolled_back=True,
                error=f"checkpoint {target.id} cannot be restored, nothing was changed: "
                + "; ".join(f"{p}: {why}" for p, why in damaged),
            )
        safety = host.record_foreign("safety", {"label": f"before restoring {target.id}"})
        for data, bid in steps.new_blobs:
            host.blobs.put(data, bid)
        txn = RestoreTransaction(host, plan)
        cap.begin_own_renames(op.path for op in steps.ops if op.kind == "write" and op.seen.entry is not None)
        settled: Mapping[str, int] = {}
        try:
            trash = host.store_dir / "trash" / txn.id
            res = apply_disk(host.workspace, trash, steps.ops, cap.drain_own_renames)
            cap.touched([op.path for op in steps.ops] + res.swept)
            if not res.ok:
                if res.rolled_back:  # else the transaction stays open: the next open rolls back the rest
                    txn.abandon("conflict" if res.conflicts else "failed")
                return _apply_failure(target, plan, steps, res)
            cp = txn.commit(
                self._result(steps, res),
                conversation=target.conversation if mode == "both" else host.head.conversation,
                editor_state=target.editor_state if mode == "both" else None,
                meta={"mode": mode},
            )
            settled = res.renames
        finally:
            # Only a committed apply settles its renames: what it renamed into place and nobody
            # touched since is what the head records, so the next capture does not read it
            # again. Otherwise every path it touched stays pending.
            cap.settle_own_renames(settled)
        return RestoreApplied(
            target_id=target.id,
            mode=mode,
            plan=plan,
            files=steps.outcomes,
            skipped=skipped,
            checkpoint=cp,
            safety_checkpoint_id=safety.id if safety else None,
        )

    def _result(self, steps: Steps, res: ApplyResult) -> dict[str, FileEntry | None]:
        """The restore checkpoint's delta: the planned entries, what a forced apply swept away,
        and what rewritten ``.gitignore`` files changed in what is tracked."""
        cap = self._host.capturer
        assert cap is not None
        head = self._host.head_manifest
        for gone in res.swept:
            for p in head:
                if p == gone or p.startswith(gone + "/"):
                    steps.result.setdefault(p, None)
        after = dict(head)
        for p, e in steps.result.items():
            if e is None:
                after.pop(p, None)
            else:
                after[p] = e
        steps.result.update(cap.after_restore([op.path for op in steps.ops], after))
        return steps.result

    # ------------------------------------------------------------------ editor-applied restore
    def begin(self, plan: RestorePlan) -> RestoreTransaction:
        """Open a transaction for ``plan`` (the caller has recorded the pre-restore state)."""
        self._host.require_writer()
        return RestoreTransaction(self._host, plan)

    def commit_applied(
        self,
        plan: RestorePlan,
        *,
        resolutions: Mapping[str, ConflictResolution] | None = None,
        editor_state: Mapping[str, Any] | None = None,
        conversation: str | None = None,
        transaction: RestoreTransaction | None = None,
    ) -> RestoreOutcome:
        """See :meth:`retrace.engine.engine.Engine.commit_applied_restore`."""
        host = self._host
        host.require_writer()
        cap = host.capturer
        assert cap is not None
        t0 = time.perf_counter()
        target = host.get(plan.target_id)
        paths: list[str] = []
        for f in plan.files:
            paths.append(f.path)
            if f.from_path:
                paths.append(f.from_path)
        captured = cap.current_entries(paths)
        checked = verify_applied(plan, dict(resolutions or {}), captured)
        if checked.bad:
            if transaction is not None:
                transaction.abandon("failed")
            failed = RestoreFailed(
                target_id=target.id,
                mode=plan.mode,
                plan=plan,
                files=checked.outcomes,
                rolled_back=False,
                error="the editor did not apply the restore exactly: " + "; ".join(checked.bad),
            )
            self._record_restore(t0, failed)
            return failed
        delta = {p: captured.get(p) for p in paths}
        fields: dict[str, Any] = {
            "editor_state": editor_state,
            "conversation": conversation,
            "meta": {"mode": plan.mode, "appliedBy": "editor"},
        }
        if transaction is not None:
            cp = transaction.commit(delta, **fields)
        else:
            cp = host.commit_delta(
                "restore",
                delta,
                label=f"restore {target.id}",
                session_id=target.session_id,
                restored_from=target.id,
                **fields,
            )
        applied = RestoreApplied(
            target_id=target.id, mode=plan.mode, plan=plan, files=checked.outcomes, checkpoint=cp
        )
        self._record_restore(t0, applied)
        return applied

    def take_safety_checkpoint(self, *, editor_state: Mapping[str, Any] | None = None) -> Checkpoint | None:
        """See :meth:`retrace.engine.engine.Engine.take_safety_checkpoint`."""
        host = self._host
        if editor_state is None:
            return host.record_foreign("safety", {"label": "before an editor-applied restore"})
        host.require_writer()
        cap = host.capturer
        assert cap is not None
        delta = cap.detect(host.head_manifest)
        return host.commit_delta(
            "safety",
            delta,
            label="before an editor-applied restore (unsaved editor text kept)",
            editor_state=editor_state,
        )


_ENDINGS = {"restored": "overwrite", "merged": "merge", "skipped": "skip", "conflict": "unresolved"}


def conflict_endings(files: Iterable[FileOutcome]) -> dict[str, int]:
    """How the conflicting files of a restore ended, counted by resolution (``overwrite``,
    ``merge``, ``skip``, ``unresolved``; anything else, e.g. ``failed``, under its own status)."""
    out: dict[str, int] = {}
    for f in files:
        if f.action == "conflict":
            key = _ENDINGS.get(f.status, f.status)
            out[key] = out.get(key, 0) + 1
    return out


def _gitignores_above(paths: Iterable[str]) -> list[str]:
    """The ``.gitignore`` paths of every ancestor directory of ``paths`` (the root's included)."""
    dirs: set[str] = set()
    for p in paths:
        head = p.rpartition("/")[0]
        while head not in dirs:
            dirs.add(head)
            if not head:
                break
            head = head.rpartition("/")[0]
    return [f"{d}/.gitignore" if d else ".gitignore" for d in sorted(dirs)]


def _agrees(e: FileEntry, st: os.stat_result) -> bool:
    """The recorded entry is not contradicted by the lstat (kind, size, executable bit)."""
    if stat.S_ISLNK(st.st_mode):
        return e.kind == "symlink"
    return (
        e.kind == "file"
        and stat.S_ISREG(st.st_mode)
        and e.size == st.st_size
        and e.executable == bool(st.st_mode & stat.S_IXUSR)
    )


def _apply_failure(target: Checkpoint, plan: RestorePlan, steps: Steps, res: ApplyResult) -> RestoreOutcome:
    mode = plan.mode
    if res.damaged and res.rolled_back and res.failed_path is not None:
        # Verified while writing: the restore could not get every byte, and changed nothing.
        why = f"{res.failed_path}: {DAMAGED}"
        return RestoreFailed(
            target_id=target.id,
            mode=mode,
            plan=plan,
            files=[FileOutcome(path=res.failed_path, action="overwrite", status="failed", detail=DAMAGED)],
            rolled_back=True,
            error=f"checkpoint {target.id} cannot be restored, nothing was changed: {why}",
        )
    if res.conflicts and res.rolled_back:
        files = [
            FileOutcome(path=p, action="conflict", status="conflict", detail=why)
            for p, why in res.conflicts.items()
        ]
        return RestoreConflict(target_id=target.id, mode=mode, plan=plan, files=files)
    files = [
        FileOutcome(
            path=o.path,
            action=o.action,
            status="failed" if o.path == res.failed_path else o.status,
            detail=o.detail,
        )
        for o in steps.outcomes
    ]
    return RestoreFailed(
        target_id=target.id,
        mode=mode,
        plan=plan,
        files=files,
        error=res.error or "apply failed",
        rolled_back=res.rolled_back,
    )
