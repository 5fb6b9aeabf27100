"""Stored and returned models of the checkpoint engine.

These are the engine's public vocabulary: the journal stores them, the CLI prints them
(``--json``), and the JSON-RPC protocol embeds them unchanged, so each concept is declared
exactly once, here. All are :class:`~retrace.camel.CamelModel` (camelCase on the wire).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from retrace.camel import CamelModel

Recoverability = Literal["full", "partial", "none"]
"""``full``: every change is stored; ``partial``: some file could not be stored (see
``unrecoverable``); ``none``: nothing of this checkpoint's changes can be restored."""

CheckpointKind = Literal[
    "baseline", "tool", "external", "safety", "restore", "manual", "summary", "background"
]
"""Why a checkpoint exists: the session ``baseline``; after an agent ``tool`` call; changes made by
someone else (``external``); the ``safety`` capture taken before a restore; the ``restore`` itself;
a ``manual`` mark (CLI, user); a conversation ``summary``."""

RestoreMode = Literal["code", "conversation", "both"]

FileStatus = Literal["added", "modified", "deleted", "renamed"]


class FileEntry(CamelModel):
    """One manifest entry: what a path holds at a checkpoint."""

    kind: Literal["file", "symlink"]
    hash: str | None
    """Blob id (hex SHA-256 of the raw bytes; of the link target for symlinks). ``None`` when the
    content could not be stored (over the size cap, unreadable): see ``unstored``."""
    size: int
    executable: bool = False
    target: str | None = None
    """Symlink target exactly as ``os.readlink`` returned it (never followed)."""
    unstored: str | None = None
    """Why the content is not stored, e.g. ``"over size cap (12.0 MB > 8.0 MB)"``."""


class Unrecoverable(CamelModel):
    """A changed file whose new content could not be stored."""

    path: str
    reason: str


class FileChange(CamelModel):
    """A changed path between two states, with line statistics (text files only)."""

    path: str
    status: FileStatus
    old_path: str | None = None
    """For ``renamed``: where the file came from."""
    additions: int = 0
    deletions: int = 0
    binary: bool = False
    approximate: bool = False
    """The line counts are an estimate: counting ran out of its time budget (net change exact)."""
    counted: bool = True
    """``False``: the line counts were left out when the checkpoint was recorded (past the
    commit's work bound) and are not known yet (``additions``/``deletions`` are 0, not a count):
    :meth:`Engine.count_lines <retrace.engine.engine.Engine.count_lines>` computes them."""


class TerminalState(CamelModel):
    """The agent's shell at a checkpoint: where it stands and what its commands changed in its
    environment, relative to the server's base environment for tool commands (only that
    difference is recorded, never the whole environment). A variable whose name (or value) looks
    secret is recorded by name only, in ``hidden``: its value is never stored."""

    cwd: str = ""
    """Workspace-relative current directory, POSIX-style (``""``: the workspace root)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the commands set or changed, with their values (secret-looking ones excluded)."""
    hidden: list[str] = Field(default_factory=list)
    """Variables the commands set or changed whose value is not recorded (it looks secret)."""
    unset: list[str] = Field(default_factory=list)
    """Variables of the base environment the commands removed."""


class Checkpoint(CamelModel):
    """A recorded workspace state (plus the context in which it was recorded)."""

    id: str
    parent: str | None
    """Previous head when this checkpoint was committed (``None`` only for the first baseline)."""
    session_id: str
    turn_id: str | None = None
    kind: CheckpointKind
    label: str = ""
    created_at: datetime
    tool: str | None = None
    """Tool name for ``kind == "tool"`` (e.g. ``"edit_file"``)."""
    tool_call_id: str | None = None
    files: list[FileChange] = Field(default_factory=list)
    """What changed relative to ``parent``."""
    recoverability: Recoverability = "full"
    unrecoverable: list[Unrecoverable] = Field(default_factory=list)
    restored_from: str | None = None
    """For ``kind == "restore"``: the checkpoint that was restored."""
    editor_state: dict[str, Any] | None = None
    """Opaque editor state (open editors, selections…) supplied by the client."""
    conversation: str | None = None
    """Opaque conversation cursor (id of the last message) supplied by the agent."""
    terminal: TerminalState | None = None
    """The agent session's shell state (cwd, environment changes) right after this checkpoint;
    ``None`` for checkpoints no agent session made (baseline, restore, safety, marks)."""
    capture_ms: float = 0.0
    """How long the capture took, for statistics."""
    meta: dict[str, Any] = Field(default_factory=dict)
    damage: str | None = None
    """Set (never stored) when the store is damaged so that this checkpoint cannot be restored:
    why, e.g. ``"its parent checkpoint 2kp…'s journal entry is unreadable"``. Such a checkpoint
    is listed with ``recoverability == "none"``; everything else stays readable and restorable."""


# --------------------------------------------------------------------------- restore plans


class ConflictInfo(CamelModel):
    """Why a planned file change would clobber work that is not the agent's."""

    reason: Literal["unrecorded", "external", "unreadable", "unsaved"]
    """``unrecorded``: the file on disk differs from what the last checkpoint recorded;
    ``external``: the latest recorded change to the file was made outside the agent;
    ``unreadable``: the current file could not be read to compare it (or something else is in
    the way); ``unsaved``: the file is open in the editor with unsaved changes."""
    detail: str
    merged_text: str | None = None
    """Result of a clean 3-way merge (base = last agent-known content, ours = disk, theirs =
    target), when the file is text and every hunk applied; ``None`` otherwise."""


ConflictResolution = Literal["overwrite", "skip", "merge"]

PlanAction = Literal["create", "overwrite", "delete", "rename", "chmod", "conflict"]


class PlannedFile(CamelModel):
    """One entry of a restore plan."""

    path: str
    action: PlanAction
    from_path: str | None = None
    """For ``rename``: the current path that becomes ``path``."""
    current: FileEntry | None
    """What is on disk now (``None``: absent)."""
    target: FileEntry | None
    """What the target checkpoint has (``None``: the file must not exist)."""
    conflict: ConflictInfo | None = None
    """Set when ``action == "conflict"``."""
    intended: Literal["create", "overwrite", "delete", "rename", "chmod"] | None = None
    """For a conflict: what the restore would do if the conflict is resolved by overwriting."""


class PlanCounts(CamelModel):
    create: int = 0
    overwrite: int = 0
    delete: int = 0
    rename: int = 0
    chmod: int = 0
    conflict: int = 0


class KeptPath(CamelModel):
    """A path a restore deliberately leaves alone (e.g. ignored now or at the target: never
    the agent's tracked content, so never the restore's to delete)."""

    path: str
    reason: str


class RestorePlan(CamelModel):
    """A pure description of what restoring ``target_id`` would change. Nothing is applied."""

    target_id: str
    head_id: str
    mode: RestoreMode
    files: list[PlannedFile]
    counts: PlanCounts
    unrecoverable: list[Unrecoverable] = Field(default_factory=list)
    """Files the target needs but whose content was never stored."""
    kept: list[KeptPath] = Field(default_factory=list)
    """Files the restore will not touch on purpose, with the reason (reported to the user)."""


# --------------------------------------------------------------------------- restore outcomes

FileOutcomeStatus = Literal["restored", "merged", "skipped", "conflict", "failed", "unchanged"]


class FileOutcome(CamelModel):
    path: str
    action: PlanAction
    status: FileOutcomeStatus
    detail: str | None = None


class _OutcomeBase(CamelModel):
    target_id: str
    mode: RestoreMode
    dry_run: bool = False
    files: list[FileOutcome] = Field(default_factory=list)
    plan: RestorePlan | None = None
    skipped: list[str] = Field(default_factory=list)
    """Conflicting paths left as they are (resolved ``skip``); each is in ``files`` with its reason."""


class RestorePreview(_OutcomeBase):
    """A dry run: what the restore would do with the given resolutions. Nothing was changed."""

    kind: Literal["preview"] = "preview"
    dry_run: bool = True


class RestoreApplied(_OutcomeBase):
    """Everything in scope now matches the target."""

    kind: Literal["applied"] = "applied"
    checkpoint: Checkpoint | None = None
    """The new ``restore`` checkpoint (absent for a dry run)."""
    safety_checkpoint_id: str | None = None
    """Checkpoint of unrecorded changes captured just before applying, if there were any."""


class RestoreConflict(_OutcomeBase):
    """Nothing was changed: some file would overwrite work that is not the agent's."""

    kind: Literal["conflict"] = "conflict"


class NothingToRestore(_OutcomeBase):
    """The workspace already matches the target in scope. Distinct from an empty plan."""

    kind: Literal["nothingToRestore"] = "nothingToRestore"
    reason: str = ""


class RestoreFailed(_OutcomeBase):
    """The restore could not be completed; ``rolled_back`` tells whether the workspace is as before."""

    kind: Literal["failed"] = "failed"
    error: str
    rolled_back: bool = True


RestoreOutcome = Annotated[
    RestorePreview | RestoreApplied | RestoreConflict | NothingToRestore | RestoreFailed,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- store statistics


class LatencySummary(CamelModel):
    count: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0


class SubagentStats(CamelModel):
    """The subagents (``task`` calls) of every session, from their journaled ``task`` events."""

    started: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    """How many children ended each way (merged, conflicts, failed, cancelled, interrupted,
    discarded; ``running`` while one runs)."""
    conflicts: int = 0
    """Paths reported as merge conflicts, over every child."""
    max_parallel: int = 0
    """The most children of one reply that worked at the same time."""
    peak_rss_mib: float = 0.0
    """The server's peak resident memory at a child's end (children run inside the server)."""
    bytes: int = 0
    """Disk used by the children's own stores and workspace copies."""


class StoreStats(CamelModel):
    """The store's figures: ``retrace stats`` and the status bar's ``retrace/stats`` alike (one
    pipeline, :mod:`retrace.engine.store_stats`)."""

    checkpoints: int
    """The intact ``checkpoint`` lines (a damaged or unsealed one is left out; verify reports it)."""
    sessions: int
    blobs: int
    blob_bytes: int
    """Bytes on disk for compressed blobs."""
    raw_bytes: int
    """Uncompressed size of the stored blobs."""
    journal_bytes: int
    total_bytes: int
    """The store's bytes on disk, the remote cache left out: the storage the Health panel draws
    and the alerts compare with ``maxBytes`` (subagent stores included: ``subagents.bytes``)."""
    capture: LatencySummary
    restore: LatencySummary
    restores: int = 0
    """Restores that changed or tried to change the workspace (applied or failed; conflict
    refusals and nothing-to-restore are not counted)."""
    restores_succeeded: int = 0
    subagents: SubagentStats = Field(default_factory=SubagentStats)


class GcReport(CamelModel):
    checkpoints_dropped: int
    blobs_removed: int
    bytes_freed: int
    subagent_stores_dropped: int = 0
    """Whole subagent stores (``<store>/tasks/<id>/``) retention dropped (``app/task_stores.py``);
    ``checkpointsDropped`` and ``bytesFreed`` include what it did inside and with them."""
    notes: list[str] = Field(default_factory=list)
    """Entries of ``tasks/`` reported and skipped (a link, a file, an unknown or damaged store)."""


# --------------------------------------------------------------------------- store verification

DamageKind = Literal["journalLine", "checkpointEntry", "checksum", "path", "blob", "snapshot"]


class StoreDamage(CamelModel):
    """One damaged piece of the store."""

    kind: DamageKind
    """``journalLine``: a line that is not a readable event; ``checkpointEntry``: a checkpoint line
    with a wrong shape; ``checksum``: a journal line whose checksum does not match its content
    (a changed byte) or that lost its checksum; ``path``: a path in a journal line that is not a
    workspace path (``..``, absolute, ``.git``, NUL…: ignored, never restored); ``blob``: a blob
    missing, truncated or not matching its hash; ``snapshot``: a manifest snapshot that cannot be
    decoded (or that holds such a path)."""
    where: str
    """``<journal>:<line>`` or the blob id."""
    reason: str
    checkpoint_id: str | None = None
    """The checkpoint this piece belongs to, when it is known."""


class AffectedCheckpoint(CamelModel):
    """A checkpoint that cannot be (fully) restored because of damage."""

    id: str
    reason: str
    paths: list[str] = Field(default_factory=list)
    """Files whose stored content is damaged (empty when the whole manifest is lost)."""


class VerifyReport(CamelModel):
    """What ``retrace verify`` found (and, with ``repair``, what it did)."""

    ok: bool
    quick: bool
    """Quick: journals and blob presence only (no blob is read); else every blob's hash too."""
    journal_lines: int = 0
    checkpoints: int = 0
    blobs: int = 0
    remote_blobs: int = 0
    """Referenced blobs stored only in a configured remote (fetched when needed): not damage."""
    damage: list[StoreDamage] = Field(default_factory=list)
    affected: list[AffectedCheckpoint] = Field(default_factory=list)
    repaired: list[str] = Field(default_factory=list)
    """With repair: one line per action (what was quarantined where, what was rebuilt)."""
    quarantine: str | None = None
    """With repair: the directory the damaged pieces were moved to (nothing is deleted)."""
