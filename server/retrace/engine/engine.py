"""The engine facade: the one object the CLI, the server and the benchmark use.

CONTRACT (signatures are fixed; other packages code against them):

    engine = Engine.open(workspace, store)      # creates or opens; builds/refreshes the baseline
    cp = engine.checkpoint(label=..., changed_paths=None)   # None = detect every change
    outcome = engine.restore(cp.id, mode="code", dry_run=False, force=False)
    changes = engine.diff(a_id, b_id)
    engine.close()

The engine owns one workspace and one store directory. Checkpoints of all sessions form one
tree; ``head`` is the checkpoint the workspace currently matches (the most recently committed
one). Sessions only group checkpoints (the server makes one per conversation).

Internals: every journal is replayed into memory on open (checkpoints, per-checkpoint deltas,
snapshot blob ids); the head manifest is kept in memory and updated by each commit, so an
edit checkpoint costs O(changed paths). Any other checkpoint's entries are found by walking
its ancestry back to the nearest snapshot (bounded by :func:`needs_snapshot`).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH115, PTH117, PTH118, PTH123

from __future__ import annotations

import errno
import gc
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrace.engine.capture import Capturer, Ignorer, kept_by_rules
from retrace.engine.capture.scan import read_entry
from retrace.engine.commit import build_checkpoint, file_changes
from retrace.engine.config import EngineConfig
from retrace.engine.errors import (
    BlobCorrupt,
    PathOutsideWorkspace,
    RetraceError,
    StorageFull,
    StoreCorrupt,
    StoreNotInitialised,
    UnknownCheckpoint,
)
from retrace.engine.gc import GcTarget, collect, store_stats
from retrace.engine.history import History, replay
from retrace.engine.ids import IdGenerator
from retrace.engine.manifest import (
    Delta,
    DirIndex,
    Manifest,
    delta_to_json,
    encode_snapshot,
    needs_snapshot,
    same,
)
from retrace.engine.models import (
    Checkpoint,
    CheckpointKind,
    ConflictResolution,
    FileChange,
    FileEntry,
    FileOutcome,
    GcReport,
    KeptPath,
    NothingToRestore,
    RestoreApplied,
    RestoreConflict,
    RestoreFailed,
    RestoreMode,
    RestoreOutcome,
    RestorePlan,
    RestorePreview,
    StoreStats,
    Unrecoverable,
)
from retrace.engine.restore.disk import ApplyResult, Seen, apply_disk, blocking_ancestor, drain_trash
from retrace.engine.restore.planner import PathState, dir_emptied_by, plan_restore
from retrace.engine.restore.recovery import begin_restore, end_restore, recover_interrupted_restores
from retrace.engine.restore.resolver import resolve
from retrace.engine.restore.steps import Steps, build_steps
from retrace.engine.restore.verify import verify_applied
from retrace.engine.stats import unified_diff_lines
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import (
    CheckpointEvent,
    EventSchemaError,
    JournalEvent,
    RestoreStatsEvent,
    event_json,
    parse_event,
)
from retrace.engine.store.journal import JournalWriter, read_journal, repair_tail
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.engine.store.lock import StoreLock
from retrace.engine.workspace import DirTree, EscapeError, Identity
from retrace.text import decode_text

log = logging.getLogger(__name__)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: an open allocates ~50k manifest entries (acyclic),
    and the collections they trigger would traverse them over and over (half of a warm open)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


UNIFIED_DIFF_BUDGET_S = 2.0
"""Time for the line diffs of one ``unified_diff`` call (all files): past it a file's hunks are
coarser (still a correct patch), never a stalled request."""

DAMAGED = "stored content is damaged or missing"
"""Start of a restore outcome's detail when a file's recorded bytes cannot be read intact."""

EXTERNAL_KINDS = frozenset({"external", "safety"})
"""Checkpoint kinds whose changes were not made by the agent (restore treats them as foreign work)."""


@contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """Store write failures as one clear RetraceError line (disk full → StorageFull)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageFull(f"the disk holding the Retrace store is full: {what} ({exc})") from exc
        raise RetraceError(f"store write failed: {what} ({exc})") from exc


class Engine:
    """Checkpoint engine for one workspace. Not thread-safe: callers serialise access."""

    workspace: Path
    store_dir: Path
    config: EngineConfig

    def __init__(self, workspace: Path, store_dir: Path, config: EngineConfig, readonly: bool) -> None:
        self.workspace = workspace
        self.store_dir = store_dir
        self.config = config
        self.readonly = readonly
        self.problems: list[str] = []
        """Store problems found on open (corrupt journal lines, missing blobs): reported, not fatal."""
        self.recovered: list[str] = []
        """One line per interrupted restore this open rolled back (or could not)."""
        self._layout = StoreLayout(store_dir)
        self._blobs = BlobStore(self._layout.blobs, durable=config.durable_blobs)
        self._lock = StoreLock(self._layout.lock)
        self._ids = IdGenerator()
        self._history = History(self._blobs)
        # Aliases of the history's own containers (the commit path appends to them in place).
        self._cps: dict[str, Checkpoint] = self._history.cps
        self._order: list[str] = self._history.order
        self._deltas: dict[str, Delta | None] = self._history.deltas
        self._snapshots: dict[str, str] = self._history.snapshots
        self._snap_depth: dict[str, int] = self._history.snap_depth
        self._head_id: str | None = None
        self._head: Manifest = {}
        self._prov: dict[str, str] = {}
        """path → id of the checkpoint with its latest change in the head's ancestry."""
        self._writers: dict[str, JournalWriter] = {}
        self._session_id = ""
        self._closed = False
        self._capture: Capturer | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(
        cls,
        workspace: Path,
        store: Path | None = None,
        *,
        session_id: str | None = None,
        config: EngineConfig | None = None,
        readonly: bool = False,
        create: bool = True,
        catch_up: bool = True,
    ) -> Engine:
        """Open (or with ``create``, initialise) the store for ``workspace``.

        ``store`` defaults to ``default_store_dir(workspace)`` (``$RETRACE_STORE`` wins). A writer
        takes an exclusive lock on the store for its lifetime (:class:`StoreLocked` otherwise);
        ``readonly`` opens without the lock and never writes. Opening a writer makes sure a
        baseline exists (a ``baseline`` checkpoint on first open; on later opens, any change
        made while no engine was open is recorded as an ``external`` checkpoint) before it
        returns, so every later change has a stored pre-image.
        ``session_id``: the session new checkpoints belong to by default (new id if ``None``).
        ``catch_up=False`` skips that ``external`` checkpoint: for a caller that is about to
        checkpoint the workspace itself (``retrace checkpoint``), those changes are its own.
        """
        ws = Path(os.path.realpath(Path(workspace).expanduser()))
        if not ws.is_dir():
            raise RetraceError(f"workspace is not a directory: {workspace}")
        store_dir = Path(store).expanduser().absolute() if store is not None else default_store_dir(ws)
        StoreLayout(store_dir).check_outside(ws)
        with _gc_paused():
            return cls._open_engine(
                ws,
                store_dir,
                config=config,
                readonly=readonly,
                session_id=session_id,
                create=create,
                catch_up=catch_up,
            )

    @classmethod
    def _open_engine(
        cls,
        ws: Path,
        store_dir: Path,
        *,
        config: EngineConfig | None,
        readonly: bool,
        session_id: str | None,
        create: bool,
        catch_up: bool,
    ) -> Engine:
        try:
            eng = cls(ws, store_dir, config or EngineConfig(), readonly)
        except OSError as exc:
            raise RetraceError(f"cannot open the store {store_dir}: {exc}") from exc
        try:
            eng._open_inner(session_id, create, catch_up)
        except OSError as exc:
            eng.close()
            if exc.errno == errno.ENOSPC:
                raise StorageFull(f"disk full while opening the store {store_dir}: {exc}") from exc
            raise RetraceError(f"cannot open the store {store_dir}: {exc}") from exc
        except BaseException:
            eng.close()
            raise
        return eng

    def _open_inner(self, session_id: str | None, create: bool, catch_up: bool = True) -> None:
        ws, layout = self.workspace, self._layout
        if self.readonly or not create:
            if not layout.meta.exists():
                raise StoreNotInitialised(f"no Retrace store at {self.store_dir} (open a writer first)")
            meta = layout.read_meta()
        else:
            meta = layout.init(ws)
        if meta.get("workspace") not in (None, str(ws)):
            raise RetraceError(
                f"store {self.store_dir} belongs to workspace {meta.get('workspace')}, not {ws}"
            )
        if not self.readonly:
            self._lock.acquire()
            # Cut torn tails now (not only when a session is next written) so every later
            # append to any journal starts on a fresh line.
            for sid in layout.session_ids():
                repair_tail(layout.journal(sid))
        self._load()
        self._session_id = session_id or self._ids.new()
        if self.readonly:
            return
        cap = self._capture = Capturer(self.workspace, self._layout, self._blobs, self.config)
        cap.start()
        if self._head_id is not None:
            # A restore some process was applying to this store when it died is rolled back
            # first: before anyone works on a half-restored workspace, and before the catch-up
            # capture could record the half-applied files as an external change.
            self.recovered = recover_interrupted_restores(self)
        if self._head_id is None:
            self._commit_baseline()
        elif catch_up:
            delta = cap.detect(self._head, full=True)
            if delta:
                self._commit("external", delta, label="changes made while Retrace was not running")
        else:
            cap.full_next = True
        cap.dirs = DirIndex(source=lambda: self._head)  # lazy: built on the first rm -r
        cap.save_cache()

    def close(self) -> None:
        """Flush caches (stat cache), stop the watcher, release the lock. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # Every step runs even if an earlier one fails (a full disk makes the stat-cache save
        # fail): the lock must be released whatever happens. The first error is raised at the end.
        errors: list[BaseException] = []
        steps: list[Callable[[], None]] = []
        if self._capture is not None:
            steps += [self._capture.save_cache, self._capture.stop, drain_trash]
        steps += [w.close for w in self._writers.values()]
        steps.append(self._lock.release)
        for step in steps:
            try:
                step()
            except Exception as exc:
                errors.append(exc)
        self._writers.clear()
        if errors:
            raise errors[0]

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        """Replay the journals. Damage is reported in ``problems`` and marked on the checkpoints
        it affects; the head is the newest checkpoint whose manifest can be rebuilt."""
        present = set(self._blobs.ids())
        self._blobs.mark_known(present)
        report = replay(self._layout, self._history, present)
        self.problems.extend(report.problems)
        for cid in self._order:
            self._ids.observe(cid)
        usable = [cid for cid in self._order if cid not in self._history.damage]
        while usable:
            head_id = usable.pop()
            try:
                self._head = dict(self._history.manifest_at(head_id))
            except StoreCorrupt as exc:
                self._history.mark_damaged(head_id, str(exc))
                self.problems.append(f"checkpoint {head_id}: {exc}")
                continue
            self._head_id = head_id
            break
        if self._head_id is not None:
            self._rebuild_provenance()
            self._report_missing_blobs(present)
        for msg in self.problems:
            log.warning("%s", msg)

    def _report_missing_blobs(self, present: set[str]) -> None:
        missing = {e.hash for e in self._head.values() if e.hash and e.kind == "file"} - present
        if missing:
            self.problems.append(
                f"{len(missing)} blob(s) referenced by head {self._head_id} are missing from the store"
            )
        broken = [cid for cid in self._order if self._misses_blobs(cid, present)]
        if broken:
            shown = ", ".join(broken[:5]) + (" …" if len(broken) > 5 else "")
            self.problems.append(
                f"{len(broken)} checkpoint(s) reference blobs missing from the store "
                f"(they cannot be fully restored): {shown}"
            )

    def _misses_blobs(self, cid: str, present: set[str]) -> bool:
        return any(b not in present for b in self._history.referenced_blobs(cid))

    def _rebuild_provenance(self) -> None:
        self._prov = {}
        for cid in self._ancestry(self._head_id):
            d = self._deltas.get(cid)
            if d is None:
                continue
            for p in d:
                self._prov.setdefault(p, cid)

    # ------------------------------------------------------------------ manifests
    def _ancestry(self, cid: str | None) -> Iterator[str]:
        return self._history.ancestry(cid)

    def _snapshot(self, sid: str) -> Manifest:
        return self._history.snapshot(sid)

    def _remember_snapshot(self, sid: str, m: Manifest) -> None:
        """Cache a snapshot we just wrote (a copy: the head manifest keeps changing), so the
        first restore touching an old path does not have to decode it from the store."""
        self._history.remember_snapshot(sid, m)

    def _manifest_at(self, cid: str) -> Manifest:
        """Full manifest of a checkpoint (a fresh dict the caller may not mutate if head)."""
        if cid == self._head_id and self._head:
            return self._head
        return self._history.manifest_at(cid)

    def _entries_at(self, cid: str, paths: Iterable[str]) -> dict[str, FileEntry | None]:
        if cid == self._head_id:
            return {p: self._head.get(p) for p in paths}
        return self._history.entries_at(cid, paths)

    def _changed_between(self, a: str, b: str) -> set[str]:
        """Paths whose entries differ between checkpoints ``a`` and ``b``."""
        return self._history.changed_between(a, b, self._manifest_at, self._entries_at)

    # ------------------------------------------------------------------ commit
    def _writer(self, session_id: str) -> JournalWriter:
        self._require_writer()
        w = self._writers.get(session_id)
        if w is None:
            w = JournalWriter(self._layout.journal(session_id))
            self._writers[session_id] = w
        return w

    def _require_writer(self) -> None:
        if self.readonly:
            raise RetraceError("this engine was opened read-only")
        if self._closed:
            raise RetraceError("this engine is closed")

    def _content(self, e: FileEntry | None) -> bytes | None:
        """Content for line statistics (possibly from the recent-blob memory)."""
        if e is None or e.hash is None:
            return None
        if e.kind == "symlink":
            return os.fsencode(e.target or "")
        try:
            return self._blobs.get_cached(e.hash)
        except StoreCorrupt:
            return None

    def _damaged_sources(self, steps: Steps) -> list[tuple[str, str]]:
        """Writes whose recorded bytes cannot be had intact (verified by streaming, not kept)."""
        damaged: list[tuple[str, str]] = []
        new = {bid for _, bid in steps.new_blobs}
        for op in steps.ops:
            e = op.entry
            if op.kind != "write" or e is None or e.kind != "file":
                continue
            if e.hash is None:
                damaged.append((op.path, f"{DAMAGED}: never stored ({e.unstored or 'unknown reason'})"))
            elif e.hash not in new and (why := self._blobs.check(e.hash)) is not None:
                damaged.append((op.path, f"{DAMAGED}: {why}"))
        return damaged

    def _stored(self, e: FileEntry) -> tuple[bytes | None, str | None]:
        """Verified content of a file entry to write (``None`` for a symlink), or why it cannot
        be had (the reason starts with :data:`DAMAGED`)."""
        if e.kind != "file":
            return None, None
        if e.hash is None:
            return None, f"{DAMAGED}: never stored ({e.unstored or 'unknown reason'})"
        try:
            # Memory holds only bytes hashed on store or verified on read: as good as a fresh read.
            return self._blobs.get_cached(e.hash), None
        except StoreCorrupt as exc:
            return None, f"{DAMAGED}: {exc}"

    def _file_changes(
        self, old: Mapping[str, FileEntry | None], new: Delta, *, new_on_disk: bool = False
    ) -> list[FileChange]:
        """FileChanges for paths going from ``old[p]`` to ``new[p]`` (``new_on_disk``: the new
        side is the workspace, read from disk)."""
        disk = self._read_disk if new_on_disk else None
        return file_changes(old, new, content=self._content, disk=disk)[0]

    def _commit(
        self,
        kind: CheckpointKind,
        delta: Delta,
        *,
        label: str = "",
        session_id: str | None = None,
        turn_id: str | None = None,
        tool: str | None = None,
        tool_call_id: str | None = None,
        editor_state: Mapping[str, Any] | None = None,
        conversation: str | None = None,
        meta: Mapping[str, Any] | None = None,
        restored_from: str | None = None,
        capture_ms: float = 0.0,
    ) -> Checkpoint:
        """Commit ``delta`` as a checkpoint on top of the head: the one path every checkpoint
        takes (a ``baseline`` starts the tree: no parent, ``delta`` is the whole manifest)."""
        self._require_writer()
        baseline = kind == "baseline"
        base: Manifest = {} if baseline else self._head
        delta = {p: e for p, e in delta.items() if not same(base.get(p), e)}
        cid = self._ids.new()
        parent = None if baseline else self._head_id
        sid = session_id or self._session_id
        cp = build_checkpoint(
            cid=cid,
            parent=parent,
            session_id=sid,
            kind=kind,
            delta=delta,
            old=base,
            content=self._content,
            missed=self._not_captured(),
            meta=meta,
            capture_ms=capture_ms,
            label=label,
            turn_id=turn_id,
            tool=tool,
            tool_call_id=tool_call_id,
            editor_state=editor_state,
            conversation=conversation,
            restored_from=restored_from,
        )
        depth = 0 if parent is None else self._snap_depth.get(parent, 0) + 1 + len(delta)
        new_head = base
        snapshot: str | None = None
        if parent is None or needs_snapshot(depth, len(base)):
            new_head = dict(base)
            self._apply_delta(new_head, delta)
            snapshot = self._blobs.put(encode_snapshot(new_head))
        event = CheckpointEvent(
            checkpoint=cp, delta=None if baseline else delta_to_json(delta), snapshot=snapshot
        )
        with _storage_errors(f"checkpoint {cid} was not recorded"):
            self._writer(sid).append(event)
        # Committed: now (and only now) update memory.
        if self._capture is not None and self._capture.dirs is not None and not baseline:
            self._capture.dirs.apply(self._head, delta)
        if new_head is self._head:
            self._apply_delta(self._head, delta)
        else:
            self._head = new_head
        self._cps[cid] = cp
        self._order.append(cid)
        self._deltas[cid] = None if baseline else delta
        if snapshot is not None:
            self._snapshots[cid] = snapshot
            self._snap_depth[cid] = 0
            self._remember_snapshot(snapshot, self._head)
        else:
            self._snap_depth[cid] = depth
        self._head_id = cid
        if baseline:
            self._prov = {}
        for p in () if baseline else delta:
            self._prov[p] = cid
        return cp

    def _not_captured(self) -> list[Unrecoverable]:
        """Directories the capture could not list: the checkpoint cannot claim ``full``."""
        missed = self._capture.take_not_captured() if self._capture is not None else {}
        return [Unrecoverable(path=p, reason=f"not captured: {r}") for p, r in sorted(missed.items())]

    @staticmethod
    def _apply_delta(m: Manifest, delta: Delta) -> None:
        for p, e in delta.items():
            if e is None:
                m.pop(p, None)
            else:
                m[p] = e

    def _commit_baseline(self) -> None:
        assert self._capture is not None
        t0 = time.perf_counter()
        manifest = self._capture.baseline()
        self._commit(
            "baseline",
            dict(manifest),
            label="baseline",
            meta={"files": len(manifest)},
            capture_ms=(time.perf_counter() - t0) * 1000,
        )

    # ------------------------------------------------------------------ capture
    @property
    def head(self) -> Checkpoint:
        if self._head_id is None:
            raise RetraceError("the store has no checkpoint yet")
        return self._cps[self._head_id]

    def capture_status(self) -> dict[str, Any]:
        """How shell-call detection works right now (plain JSON, for status displays and the
        benchmark): ``watcher`` healthy or not (and why), and the number of full stat walks."""
        if self._capture is None:
            return {"watcher": False, "watcherReason": "watcher disabled", "walks": 0}
        return self._capture.status()

    @property
    def session_id(self) -> str:
        return self._session_id

    def new_session(self, session_id: str | None = None) -> str:
        """Start (or switch to) a session; returns its id."""
        sid = session_id or self._ids.new()
        if not sid or "/" in sid or sid.startswith(".") or len(sid) > 128:
            raise RetraceError(f"invalid session id {sid!r}")
        self._session_id = sid
        if not self.readonly:
            self._writer(sid)
        return sid

    def _rel(self, path: str | Path) -> str:
        """Workspace-relative POSIX path of ``path``; :class:`PathOutsideWorkspace` otherwise."""
        ws = str(self.workspace)
        p = os.fspath(path)
        full = os.path.normpath(p if os.path.isabs(p) else os.path.join(ws, p))
        parent, leaf = os.path.split(full)
        real_parent = os.path.realpath(parent)
        if real_parent != ws and not real_parent.startswith(ws + os.sep):
            raise PathOutsideWorkspace(str(path))
        rel = os.path.relpath(os.path.join(real_parent, leaf), ws)
        if rel in (".", "") or rel.startswith(".."):
            raise PathOutsideWorkspace(str(path))
        return rel.replace(os.sep, "/")

    def checkpoint(
        self,
        label: str = "",
        changed_paths: Iterable[str | Path] | None = None,
        *,
        kind: CheckpointKind = "manual",
        session_id: str | None = None,
        turn_id: str | None = None,
        tool: str | None = None,
        tool_call_id: str | None = None,
        editor_state: Mapping[str, Any] | None = None,
        conversation: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Checkpoint:
        """Capture and commit a checkpoint (one durable journal append).

        ``changed_paths`` (workspace-relative or absolute inside the workspace) captures exactly
        those paths: cost independent of workspace size. ``None`` detects every created,
        modified, deleted or renamed file since the head (watcher dirty set when healthy, stat
        walk otherwise). A checkpoint is committed even when nothing changed (``files == []``).
        Raises :class:`PathOutsideWorkspace` for a path outside the workspace.
        """
        self._require_writer()
        assert self._capture is not None
        t0 = time.perf_counter()
        rels = None if changed_paths is None else [self._rel(p) for p in changed_paths]
        with _storage_errors("the checkpoint was not recorded"):
            delta = self._capture.capture(self._head, rels)
        return self._commit(
            kind,
            delta,
            label=label,
            session_id=session_id,
            turn_id=turn_id,
            tool=tool,
            tool_call_id=tool_call_id,
            editor_state=editor_state,
            conversation=conversation,
            meta=meta,
            capture_ms=(time.perf_counter() - t0) * 1000,
        )

    def record_external(self, **context: Any) -> Checkpoint | None:
        """Capture changes nobody announced since the head (user edits, other tools) as an
        ``external`` checkpoint; ``None`` when there were none. Cheap when the watcher is healthy."""
        return self._record_foreign("external", context)

    def _record_foreign(self, kind: CheckpointKind, context: Mapping[str, Any]) -> Checkpoint | None:
        self._require_writer()
        assert self._capture is not None
        t0 = time.perf_counter()
        delta = self._capture.detect(self._head)
        if not delta:
            return None
        allowed = {
            "label",
            "session_id",
            "turn_id",
            "tool",
            "tool_call_id",
            "editor_state",
            "conversation",
            "meta",
        }
        unknown = set(context) - allowed
        if unknown:
            raise RetraceError(f"unknown checkpoint field(s): {', '.join(sorted(unknown))}")
        return self._commit(kind, delta, capture_ms=(time.perf_counter() - t0) * 1000, **context)

    # ------------------------------------------------------------------ timeline
    def get(self, cp_id: str) -> Checkpoint:
        """Checkpoint by id or unique id prefix; :class:`UnknownCheckpoint` otherwise."""
        cp = self._cps.get(cp_id)
        if cp is not None:
            return cp
        if len(cp_id) < 4:
            raise UnknownCheckpoint(cp_id, "give at least 4 characters")
        hits = [c for c in self._order if c.startswith(cp_id)]
        if len(hits) == 1:
            return self._cps[hits[0]]
        raise UnknownCheckpoint(cp_id, f"prefix matches {len(hits)} checkpoints" if hits else "")

    def timeline(self, session_id: str | None = None) -> list[Checkpoint]:
        """Checkpoints in commit order (all sessions when ``session_id`` is ``None``)."""
        cps = (self._cps[c] for c in self._order)
        if session_id is None:
            return list(cps)
        return [c for c in cps if c.session_id == session_id]

    def sessions(self) -> list[str]:
        ids = set(self._layout.session_ids())
        ids.update(c.session_id for c in self._cps.values())
        return sorted(ids)

    def _current_delta(self, store: bool) -> Delta:
        """Unrecorded changes on disk relative to the head (without committing)."""
        if self._capture is None:
            # Read-only engine: a walk without a watcher and without storing.
            cap = Capturer(self.workspace, self._layout, self._blobs, self.config, readonly=True)
            return cap.detect(self._head, full=True, store=False)
        return self._capture.detect(self._head, store=store)

    def diff(self, a: str, b: str | None = None) -> list[FileChange]:
        """Changes from checkpoint ``a`` to checkpoint ``b`` (``None``: the current workspace)."""
        ca = self.get(a)
        if b is not None:
            cb = self.get(b)
            paths = self._changed_between(ca.id, cb.id)
            old = self._entries_at(ca.id, paths)
            new: Delta = self._entries_at(cb.id, paths)
            return self._file_changes(old, new)
        cur = self._current_delta(store=False)
        paths = self._changed_between(ca.id, self.head.id) | set(cur)
        old = self._entries_at(ca.id, paths)
        new = {p: (cur[p] if p in cur else self._head.get(p)) for p in paths}
        new = {p: e for p, e in new.items() if not same(old[p], e)}
        return self._file_changes(old, new, new_on_disk=True)

    def _read_disk(self, rel: str) -> bytes | None:
        p = os.path.join(self.workspace, rel)
        try:
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                return os.fsencode(os.readlink(p))
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.config.max_file_bytes:
                return None
            with open(p, "rb") as f:
                return f.read()
        except OSError:
            return None

    def unified_diff(self, a: str, b: str | None = None, paths: Iterable[str] | None = None) -> str:
        """Unified patch text from ``a`` to ``b`` (``None``: current workspace)."""
        changes = self.diff(a, b)
        wanted = {self._rel(p) for p in paths} if paths is not None else None
        deadline = time.perf_counter() + UNIFIED_DIFF_BUDGET_S
        out: list[str] = []
        for ch in changes:
            if wanted is not None and ch.path not in wanted and ch.old_path not in wanted:
                continue
            src = ch.old_path or ch.path
            old = self._side(a, src)
            new = self._side(b, ch.path)
            if ch.status == "renamed":
                out.append(f"rename from {src}\nrename to {ch.path}\n")
                if old == new:
                    continue
            if (old is not None and decode_text(old) is None) or (
                new is not None and decode_text(new) is None
            ):
                out.append(f"Binary files a/{src} and b/{ch.path} differ\n")
                continue
            a_lines = (old or b"").decode().splitlines(keepends=True)
            b_lines = (new or b"").decode().splitlines(keepends=True)
            lines, approximate = unified_diff_lines(
                a_lines,
                b_lines,
                f"a/{src}" if old is not None else "/dev/null",
                f"b/{ch.path}" if new is not None else "/dev/null",
                timeout_s=max(deadline - time.perf_counter(), 0.0),
            )
            if approximate:
                log.info("diff of %s hit its time budget: hunks are correct but coarser", ch.path)
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def _side(self, cp: str | None, path: str) -> bytes | None:
        if cp is None:
            return self._read_disk(path)
        try:
            return self.file_content(cp, path)
        except BlobCorrupt:
            raise  # damaged content is never shown, not even as an absent file
        except RetraceError:
            return None

    def file_content(self, cp_id: str, path: str) -> bytes | None:
        """Bytes of ``path`` at checkpoint ``cp_id``; ``None`` if the file does not exist there.
        Raises :class:`RetraceError` when it existed but its content was not stored."""
        cp = self.get(cp_id)
        rel = self._rel(path)
        e = self._entries_at(cp.id, [rel])[rel]
        if e is None:
            return None
        if e.kind == "symlink":
            return os.fsencode(e.target or "")
        if e.hash is None:
            raise RetraceError(
                f"{rel} at checkpoint {cp.id} was not stored: {e.unstored or 'unknown reason'}"
            )
        try:
            return self._blobs.get(e.hash)
        except BlobCorrupt as exc:
            raise BlobCorrupt(exc.blob_id, f"{exc.reason} ({rel} at checkpoint {cp.id})") from None

    def manifest(self, cp_id: str) -> dict[str, FileEntry]:
        """Every tracked path of checkpoint ``cp_id`` (id or unique prefix) → its entry (a copy)."""
        return dict(self._manifest_at(self.get(cp_id).id))

    def read_blob(self, blob_id: str) -> bytes:
        return self._blobs.get(blob_id)

    # ------------------------------------------------------------------ restore
    def plan_restore(
        self,
        cp_id: str,
        *,
        mode: str = "code",
        paths: Iterable[str] | None = None,
    ) -> RestorePlan:
        """Pure plan (reads only): what restoring ``cp_id`` would change, with conflicts.
        ``paths`` narrows the scope to those files (e.g. "restore this file")."""
        target = self.get(cp_id)
        return self._plan(target, self._mode(mode), paths)

    @staticmethod
    def _mode(mode: str) -> RestoreMode:
        if mode not in ("code", "conversation", "both"):
            raise RetraceError(f"unknown restore mode {mode!r} (expected code, conversation or both)")
        return mode  # type: ignore[return-value]

    def _plan(self, target: Checkpoint, mode: RestoreMode, paths: Iterable[str] | None) -> RestorePlan:
        return self._plan_seen(target, mode, paths)[0]

    def _plan_seen(
        self, target: Checkpoint, mode: RestoreMode, paths: Iterable[str] | None
    ) -> tuple[RestorePlan, dict[str, Seen]]:
        """The plan, and what it saw on disk per path (stat identity: the apply's CAS guard)."""
        head_id = self.head.id
        scope = self._changed_between(target.id, head_id)
        if paths is not None:
            wanted = {self._rel(p) for p in paths}
            scope = {p for p in scope if p in wanted or any(p.startswith(w + "/") for w in wanted)}
        tgt = self._entries_at(target.id, scope)
        kept = self._kept_by_rules(target, sorted(scope))
        scope -= kept.keys()
        states: dict[str, PathState] = {}
        current, seen = self._read_current(scope, tgt)
        for p in scope:
            cur, err = current[p]
            ext = False
            base: FileEntry | None = None
            prov = self._cps.get(self._prov.get(p, ""))
            if prov is not None and prov.kind in EXTERNAL_KINDS:
                ext = True
                base = self._entries_at(prov.parent, [p])[p] if prov.parent else None
            states[p] = PathState(
                target=tgt[p], head=self._head.get(p), current=cur, current_error=err, external=ext, base=base
            )
        plan = plan_restore(
            target_id=target.id,
            head_id=head_id,
            mode=mode,
            states=states,
            read_blob=self._content,
            read_disk=self._read_disk,
        )
        plan.kept = [KeptPath(path=p, reason=r) for p, r in sorted(kept.items())]
        return plan, seen

    def _kept_by_rules(self, target: Checkpoint, paths: list[str]) -> dict[str, str]:
        """Planned changes the restore must not make: a path ignored now or at the target was
        not tracked content at that end, so it is neither deleted, overwritten nor created."""
        if not paths:
            return {}
        now = self._capture.ignorer if self._capture is not None else Ignorer(self.workspace, self.config)
        now.forget()  # rules as they are on disk right now

        def gitignore_at_target(dir_rel: str) -> bytes | None:
            rel = f"{dir_rel}/.gitignore" if dir_rel else ".gitignore"
            e = self._entries_at(target.id, [rel])[rel]
            return self._content(e) if e is not None and e.kind == "file" else None

        return kept_by_rules(paths, now, Ignorer(self.workspace, self.config, gitignore_at_target))

    def _read_current(
        self, rels: Iterable[str], targets: Mapping[str, FileEntry | None]
    ) -> tuple[dict[str, tuple[FileEntry | None, str | None]], dict[str, Seen]]:
        out: dict[str, tuple[FileEntry | None, str | None]] = {}
        seen: dict[str, Seen] = {}
        rels = list(rels)
        with DirTree(self.workspace) as tree:
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
                    emptied = targets.get(rel) is None or dir_emptied_by(self.workspace, rel, rels, targets)
                    out[rel] = (None, None if emptied else "a directory with untracked files is in the way")
                    seen[rel] = Seen(None, ident, directory=True)
                    continue
                entry = self._current_entry(rel, st)
                out[rel] = (entry, None)
                seen[rel] = Seen(entry, ident)
        return out, seen

    def _current_entry(self, rel: str, st: os.stat_result) -> FileEntry | None:
        if self._capture is not None:
            # The stat cache vouches for unchanged files (racily clean ones are re-read).
            return self._capture.peek(rel, st, self._head.get(rel))
        r = read_entry(os.path.join(self.workspace, rel), st, self.config.max_file_bytes)
        return r.entry if r else None

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
        """Plan, then (unless ``dry_run`` or unresolved conflicts) apply to disk atomically per
        file, verify, and commit a ``restore`` checkpoint whose parent is the previous head
        (after a ``safety`` checkpoint if unrecorded changes existed). ``force`` resolves every
        conflict with ``overwrite``; ``resolutions`` resolves them per path."""
        t0 = time.perf_counter()
        m = self._mode(mode)
        target = self.get(cp_id)
        if m == "conversation":
            return NothingToRestore(
                target_id=target.id,
                mode=m,
                dry_run=dry_run,
                reason="code unchanged (conversation-only restore)",
            )
        if not dry_run:
            self._require_writer()
        try:
            outcome = self._restore(
                target,
                m,
                dry_run=dry_run,
                force=force,
                resolutions=dict(resolutions or {}),
                paths=paths,
                skip_conflicts=skip_conflicts,
            )
        except StoreCorrupt as exc:
            # Raised while planning (before any file changed): name what cannot be restored.
            why = f"checkpoint {target.id} cannot be restored, nothing was changed: {exc}"
            raise StoreCorrupt(why) from exc
        if not dry_run and outcome.kind != "nothingToRestore":
            self._record_restore(t0, outcome.kind, target.id)
        return outcome

    def _record_restore(self, t0: float, kind: str, target_id: str) -> None:
        """The ``restore`` statistics event. Not fsynced on its own: it is informational, and
        the next durable append flushes it (a crash can lose it, never tear the journal)."""
        ms = (time.perf_counter() - t0) * 1000
        event = RestoreStatsEvent(duration_ms=round(ms, 3), kind=kind, target_id=target_id)
        self._writer(self._session_id).append(event, sync=False)

    def _restore(
        self,
        target: Checkpoint,
        mode: RestoreMode,
        *,
        dry_run: bool,
        force: bool,
        resolutions: Mapping[str, ConflictResolution],
        paths: Iterable[str] | None,
        skip_conflicts: bool = False,
    ) -> RestoreOutcome:
        plan, seen = self._plan_seen(target, mode, paths)
        if not plan.files and not plan.unrecoverable:
            return NothingToRestore(
                target_id=target.id,
                mode=mode,
                dry_run=dry_run,
                plan=plan,
                reason=f"the workspace already matches checkpoint {target.id}"
                + (" for the given paths" if paths is not None else ""),
            )
        decision = resolve(plan, force=force, resolutions=resolutions, skip_conflicts=skip_conflicts)
        if decision.unresolved:
            return RestoreConflict(
                target_id=target.id, mode=mode, dry_run=dry_run, plan=plan, files=decision.unresolved
            )
        steps = build_steps(plan, decision, seen, self._content)
        damaged = self._damaged_sources(steps)
        if damaged and not dry_run:
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
        if dry_run:
            return RestorePreview(
                target_id=target.id, mode=mode, plan=plan, files=steps.outcomes, skipped=decision.skipped
            )
        failed = [o for o in steps.outcomes if o.status == "failed"]
        if not steps.ops and failed:
            return RestoreFailed(
                target_id=target.id,
                mode=mode,
                plan=plan,
                files=steps.outcomes,
                rolled_back=True,
                error="nothing could be restored: " + "; ".join(f"{o.path}: {o.detail}" for o in failed),
            )
        if not steps.ops:
            return NothingToRestore(
                target_id=target.id,
                mode=mode,
                plan=plan,
                files=steps.outcomes,
                skipped=decision.skipped,
                reason="every change in scope was skipped",
            )
        return self._apply_steps(target, mode, plan, steps, decision.skipped)

    def _apply_steps(
        self, target: Checkpoint, mode: RestoreMode, plan: RestorePlan, steps: Steps, skipped: list[str]
    ) -> RestoreOutcome:
        assert self._capture is not None
        safety = self._record_foreign("safety", {"label": f"before restoring {target.id}"})
        for data, bid in steps.new_blobs:
            self._blobs.put(data, bid)
        intent = begin_restore(self, plan)
        res = apply_disk(self.workspace, self.store_dir / "trash" / intent, steps.ops)
        self._capture.touched([op.path for op in steps.ops] + res.swept)
        if not res.ok:
            if res.rolled_back:  # else the intent stays open: the next open rolls back the rest
                end_restore(self, intent, "conflict" if res.conflicts else "failed")
            return self._apply_failure(target, mode, plan, steps, res)
        for gone in res.swept:
            for p in self._head:
                if p == gone or p.startswith(gone + "/"):
                    steps.result.setdefault(p, None)
        after = dict(self._head)
        self._apply_delta(after, steps.result)
        steps.result.update(self._capture.after_restore([op.path for op in steps.ops], after))
        cp = self._commit(
            "restore",
            steps.result,
            label=f"restore {target.id}",
            session_id=target.session_id,
            restored_from=target.id,
            conversation=target.conversation if mode == "both" else self.head.conversation,
            editor_state=target.editor_state if mode == "both" else None,
            meta={"mode": mode},
        )
        end_restore(self, intent, "applied")
        return RestoreApplied(
            target_id=target.id,
            mode=mode,
            plan=plan,
            files=steps.outcomes,
            skipped=skipped,
            checkpoint=cp,
            safety_checkpoint_id=safety.id if safety else None,
        )

    @staticmethod
    def _apply_failure(
        target: Checkpoint, mode: RestoreMode, plan: RestorePlan, steps: Steps, res: ApplyResult
    ) -> RestoreOutcome:
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

    def commit_applied_restore(
        self,
        plan: RestorePlan,
        *,
        resolutions: Mapping[str, ConflictResolution] | None = None,
        editor_state: Mapping[str, Any] | None = None,
        conversation: str | None = None,
    ) -> RestoreOutcome:
        """For a restore applied by someone else (the editor, through ``workspace/applyEdit``):
        capture the plan's paths, verify them against the target, and commit the ``restore``
        checkpoint. Returns ``applied`` or ``failed`` listing each differing file."""
        self._require_writer()
        assert self._capture is not None
        t0 = time.perf_counter()
        target = self.get(plan.target_id)
        chosen = dict(resolutions or {})
        paths: list[str] = []
        for f in plan.files:
            paths.append(f.path)
            if f.from_path:
                paths.append(f.from_path)
        captured = self._capture.current_entries(paths)
        checked = verify_applied(plan, chosen, captured)
        outcomes, bad = checked.outcomes, checked.bad
        if bad:
            self._record_restore(t0, "failed", target.id)
            return RestoreFailed(
                target_id=target.id,
                mode=plan.mode,
                plan=plan,
                files=outcomes,
                rolled_back=False,
                error="the editor did not apply the restore exactly: " + "; ".join(bad),
            )
        delta = {p: captured.get(p) for p in paths}
        cp = self._commit(
            "restore",
            delta,
            label=f"restore {target.id}",
            session_id=target.session_id,
            restored_from=target.id,
            editor_state=editor_state,
            conversation=conversation,
            meta={"mode": plan.mode, "appliedBy": "editor"},
        )
        self._record_restore(t0, "applied", target.id)
        return RestoreApplied(target_id=target.id, mode=plan.mode, plan=plan, files=outcomes, checkpoint=cp)

    def take_safety_checkpoint(self, *, editor_state: Mapping[str, Any] | None = None) -> Checkpoint | None:
        """Record unrecorded changes (kind ``safety``) before an editor-applied restore. With
        ``editor_state`` (e.g. unsaved buffer texts) the checkpoint is taken even when the disk
        has no unrecorded change, so restoring it brings that editor state back."""
        if editor_state is None:
            return self._record_foreign("safety", {"label": "before an editor-applied restore"})
        self._require_writer()
        assert self._capture is not None
        delta = self._capture.detect(self._head)
        return self._commit(
            "safety",
            delta,
            label="before an editor-applied restore (unsaved editor text kept)",
            editor_state=editor_state,
        )

    # ------------------------------------------------------------------ session journal
    def append_event(self, event: JournalEvent | Mapping[str, Any], *, session_id: str | None = None) -> None:
        """Durably append a non-checkpoint event to the session's journal: turns, tool-call
        intents/results, messages, summaries. Pass a typed event (:mod:`retrace.engine.store.events`);
        a plain ``{"type": ..., ...}`` mapping is validated against the same models."""
        raw: JournalEvent | dict[str, Any] = dict(event) if isinstance(event, Mapping) else event
        t = raw.get("type") if isinstance(raw, dict) else raw.type
        if not isinstance(t, str) or not t:
            raise RetraceError("a journal event needs a string 'type'")
        if t == "checkpoint":
            raise RetraceError("checkpoint events are written by the engine only")
        if isinstance(raw, dict):
            raw.setdefault("ts", time.time())
        try:
            self._writer(session_id or self._session_id).append(raw)
        except EventSchemaError as exc:
            raise RetraceError(f"journal event does not match the journal format: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise RetraceError(f"journal event of type {t!r} is not plain JSON: {exc}") from None

    def events(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every journal event of a session in order, validated (checkpoints included, as
        ``{"type": "checkpoint", "checkpoint": {...}}``), in their JSON form. A torn last line is
        skipped; a damaged line or a known event type that does not validate is skipped and
        reported in the log (the rest still loads)."""
        path = self._layout.journal(session_id or self._session_id)
        for raw in read_journal(path):
            try:
                yield event_json(raw)
            except EventSchemaError as exc:
                log.warning("%s: journal event skipped (%s)", path, exc)

    def typed_events(self, session_id: str | None = None) -> Iterator[JournalEvent]:
        """:meth:`events` as typed models (event types this version does not know are left out)."""
        for raw in self.events(session_id):
            event = parse_event(raw)
            if event is not None:
                yield event

    # ------------------------------------------------------------------ housekeeping
    def stats(self) -> StoreStats:
        return store_stats(self._history, self._layout, self._blobs, len(self.sessions()))

    def gc(self) -> GcReport:
        """Apply retention (count, age, size quotas from config) and remove unreferenced blobs."""
        self._require_writer()
        # Journals may be rewritten: writers reopen lazily on the next append.
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        target = GcTarget(
            history=self._history,
            layout=self._layout,
            blobs=self._blobs,
            retention=self.config.retention,
            head_id=self._head_id,
            head=self._head,
            manifest_at=self._manifest_at,
        )
        report = collect(target)
        self._rebuild_provenance()
        if target.removed_blobs and self._capture is not None:
            self._capture.cache.drop_hashes(target.removed_blobs)
        return report
