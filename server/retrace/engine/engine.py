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
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from retrace.engine.config import EngineConfig
from retrace.engine.models import (
    Checkpoint,
    CheckpointKind,
    ConflictResolution,
    FileChange,
    GcReport,
    RestoreOutcome,
    RestorePlan,
    StoreStats,
)


class Engine:
    """Checkpoint engine for one workspace. Not thread-safe: callers serialise access."""

    workspace: Path
    store_dir: Path
    config: EngineConfig

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
    ) -> Engine:
        """Open (or with ``create``, initialise) the store for ``workspace``.

        ``store`` defaults to ``default_store_dir(workspace)`` (``$RETRACE_STORE`` wins). A writer
        takes an exclusive lock on the store for its lifetime (:class:`StoreLocked` otherwise);
        ``readonly`` opens without the lock and never writes. Opening a writer makes sure a
        baseline exists (a ``baseline`` checkpoint on first open; on later opens, any change
        made while no engine was open is recorded as an ``external`` checkpoint) before it
        returns, so every later change has a stored pre-image.
        ``session_id``: the session new checkpoints belong to by default (new id if ``None``).
        """
        raise NotImplementedError

    def close(self) -> None:
        """Flush caches (stat cache), stop the watcher, release the lock. Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ capture
    @property
    def head(self) -> Checkpoint:
        raise NotImplementedError

    @property
    def session_id(self) -> str:
        raise NotImplementedError

    def new_session(self, session_id: str | None = None) -> str:
        """Start (or switch to) a session; returns its id."""
        raise NotImplementedError

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
        raise NotImplementedError

    def record_external(self, **context: Any) -> Checkpoint | None:
        """Capture changes nobody announced since the head (user edits, other tools) as an
        ``external`` checkpoint; ``None`` when there were none. Cheap when the watcher is healthy."""
        raise NotImplementedError

    # ------------------------------------------------------------------ timeline
    def get(self, cp_id: str) -> Checkpoint:
        """Checkpoint by id or unique id prefix; :class:`UnknownCheckpoint` otherwise."""
        raise NotImplementedError

    def timeline(self, session_id: str | None = None) -> list[Checkpoint]:
        """Checkpoints in commit order (all sessions when ``session_id`` is ``None``)."""
        raise NotImplementedError

    def sessions(self) -> list[str]:
        raise NotImplementedError

    def diff(self, a: str, b: str | None = None) -> list[FileChange]:
        """Changes from checkpoint ``a`` to checkpoint ``b`` (``None``: the current workspace)."""
        raise NotImplementedError

    def unified_diff(self, a: str, b: str | None = None, paths: Iterable[str] | None = None) -> str:
        """Unified patch text from ``a`` to ``b`` (``None``: current workspace)."""
        raise NotImplementedError

    def file_content(self, cp_id: str, path: str) -> bytes | None:
        """Bytes of ``path`` at checkpoint ``cp_id``; ``None`` if the file does not exist there.
        Raises :class:`RetraceError` when it existed but its content was not stored."""
        raise NotImplementedError

    def read_blob(self, blob_id: str) -> bytes:
        raise NotImplementedError

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
        raise NotImplementedError

    def restore(
        self,
        cp_id: str,
        *,
        mode: str = "code",
        dry_run: bool = False,
        force: bool = False,
        resolutions: Mapping[str, ConflictResolution] | None = None,
        paths: Iterable[str] | None = None,
    ) -> RestoreOutcome:
        """Plan, then (unless ``dry_run`` or unresolved conflicts) apply to disk atomically per
        file, verify, and commit a ``restore`` checkpoint whose parent is the previous head
        (after a ``safety`` checkpoint if unrecorded changes existed). ``force`` resolves every
        conflict with ``overwrite``; ``resolutions`` resolves them per path."""
        raise NotImplementedError

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
        raise NotImplementedError

    def take_safety_checkpoint(self) -> Checkpoint | None:
        """Record unrecorded changes (kind ``safety``) before an editor-applied restore."""
        raise NotImplementedError

    # ------------------------------------------------------------------ session journal
    def append_event(self, event: Mapping[str, Any], *, session_id: str | None = None) -> None:
        """Durably append a non-checkpoint event (``{"type": ..., ...}``, plain JSON) to the
        session's journal: turns, tool-call intents/results, messages, summaries."""
        raise NotImplementedError

    def events(self, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every journal event of a session in order (checkpoints included, as
        ``{"type": "checkpoint", "checkpoint": {...}}``). A torn last line is skipped."""
        raise NotImplementedError

    # ------------------------------------------------------------------ housekeeping
    def stats(self) -> StoreStats:
        raise NotImplementedError

    def gc(self) -> GcReport:
        """Apply retention (count, age, size quotas from config) and remove unreferenced blobs."""
        raise NotImplementedError
