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
snapshot blob ids; the history index lets it read only the lines it needs); the head manifest
is kept in memory and updated by each commit, so an edit checkpoint costs O(changed paths).
Other checkpoints' entries: walk the ancestry back to the nearest snapshot (bounded by
:func:`needs_snapshot`). Deferred catch-up: :mod:`.catch_up`.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Unpack

from retrace.engine.capture import Capturer
from retrace.engine.catch_up import after_catch_up, gc_paused
from retrace.engine.changes import Changes
from retrace.engine.checkpointing import Committer
from retrace.engine.config import EngineConfig
from retrace.engine.errors import (
    RetraceError,
    StorageFull,
    StoreCorrupt,
    UnknownCheckpoint,
)
from retrace.engine.fsops import choice as fs_backend_choice
from retrace.engine.gc import GcTarget, collect
from retrace.engine.history import History, replay
from retrace.engine.history.head import rebuild_provenance, settle_head
from retrace.engine.history.index import HistoryIndex
from retrace.engine.history.origin import ensure_origin_key
from retrace.engine.history.replay import adopt
from retrace.engine.ids import IdGenerator
from retrace.engine.manifest import Delta, DirIndex, Manifest
from retrace.engine.models import (
    Checkpoint,
    CheckpointKind,
    FileChange,
    FileEntry,
    GcReport,
    RestoreOutcome,
    RestorePlan,
)
from retrace.engine.restore.recovery import recover_interrupted_restores
from retrace.engine.restore.restorer import AppliedRestoreOptions, RestoreOptions, Restorer
from retrace.engine.restore.transaction import RestoreTransaction
from retrace.engine.restore.trash import drain_trash
from retrace.engine.store import event_log
from retrace.engine.store.blobs import BlobSource, BlobStore
from retrace.engine.store.events import EventModel, JournalEvent, RestoreDoneEvent, RestoreIntentEvent
from retrace.engine.store.journal import JournalWriter, repair_tail
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.engine.store.lock import StoreLock
from retrace.engine.workspace import workspace_rel

log = logging.getLogger(__name__)


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
        self._writers: dict[str, JournalWriter] = {}
        self._restore_events: dict[str, list[RestoreIntentEvent | RestoreDoneEvent]] = {}
        self._session_id = ""
        self._closed = False
        self._catch_up_pending = False
        self._capture: Capturer | None = None
        self._restorer = Restorer(self)
        self._changes = Changes(self)
        self._committer = Committer(self)

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
        blob_source: BlobSource | None = None,
        defer_catch_up: bool = False,
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
        ``blob_source``: blobs only a remote has (attached before the journals are replayed, so
        an imported session whose blobs are remote-only is not damaged; read lazily).
        ``defer_catch_up``: return before that catch-up walk; it stays pending until
        :meth:`catch_up` runs it, as every capture, commit and restore does first (:mod:`.catch_up`).
        """
        fs_backend_choice()  # RETRACE_FS_BACKEND names a backend this platform runs, else one line
        ws = Path(os.path.realpath(Path(workspace).expanduser()))
        if not ws.is_dir():
            raise RetraceError(f"workspace is not a directory: {workspace}")
        store_dir = Path(store).expanduser().absolute() if store is not None else default_store_dir(ws)
        StoreLayout(store_dir).check_outside(ws)
        when = "defer" if defer_catch_up and catch_up else catch_up
        with gc_paused():
            return cls._open_engine(
                ws, store_dir, config=config, readonly=readonly, session_id=session_id, create=create,
                catch_up=when, blob_source=blob_source,
            )  # fmt: skip

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
        catch_up: bool | str,
        blob_source: BlobSource | None = None,
    ) -> Engine:
        try:
            eng = cls(ws, store_dir, config or EngineConfig(), readonly)
        except OSError as exc:
            raise RetraceError(f"cannot open the store {store_dir}: {exc}") from exc
        if blob_source is not None:
            eng._blobs.attach_source(blob_source)
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

    def _open_inner(self, session_id: str | None, create: bool, catch_up: bool | str = True) -> None:
        ws, layout = self.workspace, self._layout
        if self.readonly or not create:
            layout.existing_meta(ws)
        else:
            layout.check_owner(layout.init(ws), ws)
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
        if self._history.head_id is not None:
            # A restore some process was applying to this store when it died is rolled back
            # first: before anyone works on a half-restored workspace, and before the catch-up
            # capture could record the half-applied files as an external change.
            self.recovered = recover_interrupted_restores(self, self._restore_events)
        if self._history.head_id is None:
            self._committer.baseline()
        elif catch_up == "defer":
            self._catch_up_pending = True  # the watcher starts with the catch-up walk
        elif catch_up:
            self._run_catch_up()
        else:
            cap.full_next = True
        cap.dirs = DirIndex(source=lambda: self._history.head)  # lazy: built on the first rm -r
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

    @property
    def catch_up_pending(self) -> bool:
        """Whether an open with ``defer_catch_up`` has not yet looked for external changes."""
        return self._catch_up_pending

    def catch_up(self) -> Checkpoint | None:
        """Run the pending catch-up, if any: one walk that starts the watcher and commits what
        changed while nobody watched as an ``external`` checkpoint (returned, else ``None``).
        Stays pending if it fails. Every capture, commit and restore runs it first anyway."""
        if not self._catch_up_pending or self._capture is None:
            return None
        with gc_paused():
            cp = self._run_catch_up()
        self._catch_up_pending = False
        self._capture.save_cache()
        return cp

    def _run_catch_up(self) -> Checkpoint | None:
        assert self._capture is not None
        delta = self._capture.detect(self._history.head, full=True)
        label = "changes made while Retrace was not running"
        return self._committer.commit("external", delta, label=label) if delta else None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        """Replay the journals. Damage is reported in ``problems`` and marked on the checkpoints
        it affects; the head is the newest checkpoint whose manifest can be rebuilt."""
        if not self.readonly:
            ensure_origin_key(self._layout)  # a store written before origins existed
        present = set(self._blobs.ids())
        self._blobs.mark_known(present)
        index = HistoryIndex.load(self._layout.history_index)
        report = replay(self._layout, self._history, present, index)
        if not self.readonly:
            index.save()
        self._restore_events = report.restore_events
        self.problems.extend(report.problems)
        self._ids.observe_all(self._history.local)  # never another machine's: not our clock
        self.problems.extend(settle_head(self._history, present))
        for msg in self.problems:
            log.warning("%s", msg)

    def adopt_sessions(self, blob_source: BlobSource | None = None) -> list[str]:
        """Load the checkpoints journals gained since this engine loaded them (a session
        imported or pulled from a remote: new journals, new lines of known ones). The head
        and the workspace are unchanged. ``blob_source``: (re)attach the remote's blobs first.
        Returns the ids of the checkpoints added."""
        if blob_source is not None:
            self._blobs.attach_source(blob_source)
        present = set(self._blobs.ids())
        return adopt(self._layout, self._history, present, self._layout.session_ids())

    # ------------------------------------------------------------------ manifests
    def _manifest_at(self, cid: str) -> Manifest:
        """Full manifest of a checkpoint (a fresh dict the caller may not mutate if head)."""
        if cid == self._history.head_id and self._history.head:
            return self._history.head
        return self._history.manifest_at(cid)

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

    # ------------------------------------------------------------------ capture
    @property
    def head(self) -> Checkpoint:
        if self._history.head_id is None:
            raise RetraceError("the store has no checkpoint yet")
        return self._cps[self._history.head_id]

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

    def rel(self, path: str | Path) -> str:
        """Workspace-relative POSIX path of ``path``; :class:`PathOutsideWorkspace` otherwise."""
        return workspace_rel(str(self.workspace), path)

    def rels(self, paths: Iterable[str | Path]) -> list[str]:
        """:meth:`rel` of each of ``paths``, each parent directory resolved once per call."""
        real: dict[str, str] = {}
        return [workspace_rel(str(self.workspace), p, real) for p in paths]

    @after_catch_up
    def checkpoint(
        self, label: str = "", changed_paths: Iterable[str | Path] | None = None, **fields: Any
    ) -> Checkpoint:
        """Capture and commit a checkpoint (one durable journal append); see
        :meth:`retrace.engine.checkpointing.Committer.checkpoint` (``changed_paths``: exactly
        those paths; ``None``: detect every change; ``fields``: kind, session_id, turn_id, tool,
        tool_call_id, editor_state, conversation, meta). :class:`PathOutsideWorkspace` for a
        path outside the workspace."""
        return self._committer.checkpoint(label, changed_paths, **fields)

    @after_catch_up
    def record_external(self, **context: Any) -> Checkpoint | None:
        """Capture changes nobody announced since the head (user edits, other tools) as an
        ``external`` checkpoint; ``None`` when there were none. Cheap when the watcher is healthy."""
        return self._committer.record_foreign("external", context)

    @after_catch_up
    def record_foreign(self, kind: CheckpointKind, context: Mapping[str, Any]) -> Checkpoint | None:
        """Capture unannounced changes since the head as a ``kind`` checkpoint (``None``: none)."""
        return self._committer.record_foreign(kind, context)

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
        """Checkpoints in creation order (all sessions when ``session_id`` is ``None``)."""
        cps = (self._cps[c] for c in self._order)
        if session_id is None:
            return list(cps)
        return [c for c in cps if c.session_id == session_id]

    def sessions(self) -> list[str]:
        ids = set(self._layout.session_ids())
        ids.update(c.session_id for c in self._cps.values())
        return sorted(ids)

    @after_catch_up
    def unrecorded_changes(self) -> Delta:
        """Changes on disk relative to the head, without storing or committing anything."""
        if self._capture is None:
            # Read-only engine: a walk without a watcher and without storing.
            cap = Capturer(self.workspace, self._layout, self._blobs, self.config, readonly=True)
            return cap.detect(self._history.head, full=True, store=False)
        return self._capture.detect(self._history.head, store=False)

    def manifest(self, cp_id: str) -> dict[str, FileEntry]:
        """Every tracked path of checkpoint ``cp_id`` (id or unique prefix) → its entry (a copy)."""
        return dict(self._manifest_at(self.get(cp_id).id))

    def read_blob(self, blob_id: str) -> bytes:
        return self._blobs.get(blob_id)

    # ------------------------------------------------------------------ changes and restore
    # Thin delegations: diffs live in ``engine/changes.py``, restore in ``engine/restore/``.
    def diff(self, a: str, b: str | None = None) -> list[FileChange]:
        """Changes from checkpoint ``a`` to checkpoint ``b`` (``None``: the current workspace)."""
        return self._changes.diff(a, b)

    def count_lines(self, cp_id: str) -> Checkpoint:
        """Checkpoint ``cp_id`` with the line counts its commit left out computed (bounded)."""
        return self._changes.count_lines(self.get(cp_id))

    def unified_diff(self, a: str, b: str | None = None, paths: Iterable[str] | None = None) -> str:
        """Unified patch text from ``a`` to ``b`` (``None``: current workspace)."""
        return self._changes.unified_diff(a, b, paths)

    def file_content(self, cp_id: str, path: str) -> bytes | None:
        """Bytes of ``path`` at checkpoint ``cp_id``; ``None`` if the file does not exist there.
        Raises :class:`RetraceError` when it existed but its content was not stored."""
        return self._changes.file_content(cp_id, path)

    @after_catch_up
    def plan_restore(
        self, cp_id: str, *, mode: str = "code", paths: Iterable[str] | None = None
    ) -> RestorePlan:
        """Pure plan (reads only): what restoring ``cp_id`` would change, with conflicts.
        ``paths`` narrows the scope to those files (e.g. "restore this file")."""
        return self._restorer.plan(cp_id, mode=mode, paths=paths)

    @after_catch_up
    def restore(self, cp_id: str, **options: Unpack[RestoreOptions]) -> RestoreOutcome:
        """Plan, then (unless ``dry_run`` or unresolved conflicts) apply to disk atomically per
        file, verify, and commit a ``restore`` checkpoint whose parent is the previous head
        (after a ``safety`` checkpoint if unrecorded changes existed). ``force`` resolves every
        conflict with ``overwrite``; ``resolutions`` resolves them per path; ``paths`` narrows
        the scope; ``skip_conflicts`` restores the rest."""
        return self._restorer.restore(cp_id, **options)

    @after_catch_up
    def begin_restore(self, plan: RestorePlan) -> RestoreTransaction:
        """Open the restore transaction for ``plan`` applied by someone else (the editor); close
        it through :meth:`commit_applied_restore` or its ``abandon``."""
        return self._restorer.begin(plan)

    @after_catch_up
    def commit_applied_restore(
        self, plan: RestorePlan, **options: Unpack[AppliedRestoreOptions]
    ) -> RestoreOutcome:
        """For a restore applied by someone else (the editor, through ``workspace/applyEdit``):
        capture the plan's paths, verify them against the target, and commit the ``restore``
        checkpoint (through ``transaction`` when given). Returns ``applied`` or ``failed``
        listing each differing file."""
        return self._restorer.commit_applied(plan, **options)

    @after_catch_up
    def take_safety_checkpoint(self, *, editor_state: Mapping[str, Any] | None = None) -> Checkpoint | None:
        """Record unrecorded changes (kind ``safety``) before an editor-applied restore. With
        ``editor_state`` (e.g. unsaved buffer texts) the checkpoint is taken even when the disk
        has no unrecorded change, so restoring it brings that editor state back."""
        return self._restorer.take_safety_checkpoint(editor_state=editor_state)

    # ------------------------------------------------------------------ narrow interface
    # What the changes and restore rooms (and tests) read of the engine: public, named, small.
    @property
    def head_manifest(self) -> Manifest:
        """The head's manifest, live: read it, never mutate it (``manifest()`` gives a copy)."""
        return self._history.head

    @property
    def capturer(self) -> Capturer | None:
        """The capture component (``None`` for a read-only engine)."""
        return self._capture

    @property
    def blobs(self) -> BlobStore:
        return self._blobs

    def entries_at(self, cid: str, paths: Iterable[str]) -> dict[str, FileEntry | None]:
        """Entries of ``paths`` at checkpoint ``cid`` (``None``: absent there)."""
        if cid == self._history.head_id:
            return {p: self._history.head.get(p) for p in paths}
        return self._history.entries_at(cid, paths)

    def changed_between(self, a: str, b: str) -> set[str]:
        """Paths whose entries differ between checkpoints ``a`` and ``b``."""
        return self._history.changed_between(a, b, self._manifest_at, self.entries_at)

    def content(self, e: FileEntry | None) -> bytes | None:
        """Stored bytes of an entry (a symlink's target; possibly from the recent-blob memory),
        ``None`` when not stored."""
        if e is None or e.hash is None:
            return None
        if e.kind == "symlink":
            return os.fsencode(e.target or "")
        try:
            return self._blobs.get_cached(e.hash)
        except StoreCorrupt:
            return None

    def last_change(self, path: str) -> Checkpoint | None:
        """The checkpoint in the head's ancestry that last changed ``path``."""
        return self._cps.get(self._history.prov.get(path, ""))

    @after_catch_up
    def commit_delta(self, kind: CheckpointKind, delta: Delta, **fields: Any) -> Checkpoint:
        """Commit an already captured ``delta`` on top of the head (the one commit path)."""
        return self._committer.commit(kind, delta, **fields)

    @property
    def history(self) -> History:
        """The checkpoint graph and the head (mutated only by the commit path and retention)."""
        return self._history

    def new_id(self) -> str:
        """A checkpoint id no checkpoint of this store (local or opened from elsewhere) has."""
        return self._ids.new(self._cps)

    def journal_writer(self, session_id: str | None = None) -> JournalWriter:
        """The journal writer of ``session_id`` (default: the current session)."""
        return self._writer(session_id or self._session_id)

    def require_writer(self) -> None:
        """Raise unless this engine may write (not read-only, not closed)."""
        self._require_writer()

    # ------------------------------------------------------------------ session journal
    def append_event(
        self, event: JournalEvent, *, session_id: str | None = None, durable: bool = True
    ) -> None:
        """Append a non-checkpoint event (turns, tool-call intents/results, messages, summaries) to
        the session's journal, fsynced unless ``durable`` is false (:func:`event_log.append`)."""
        event_log.append(event, lambda: self._writer(session_id or self._session_id), durable=durable)

    def events(
        self,
        session_id: str | None = None,
        report: event_log.EventReport | None = None,
        *,
        skip: Collection[EventModel] = (),
        only: Collection[EventModel] | None = None,
        start: int = 0,
    ) -> Iterator[JournalEvent]:
        """A session's events in order, typed (:func:`event_log.read`; left out: ``report``)."""
        path = self._layout.journal(session_id or self._session_id)
        return event_log.read(path, report, skip=skip, only=only, start=start)

    # ------------------------------------------------------------------ housekeeping
    @after_catch_up
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
            head_id=self._history.head_id,
            head=self._history.head,
            manifest_at=self._manifest_at,
        )
        report = collect(target)
        rebuild_provenance(self._history)
        if target.removed_blobs and self._capture is not None:
            self._capture.cache.drop_hashes(target.removed_blobs)
        return report
