"""Every params / result / notification payload of Retrace's JSON-RPC methods.

Engine models (Checkpoint, FileChange, RestorePlan, RestoreOutcome, StoreStats…) and agent models
(AgentEvent, PermissionRequest/Response, ConversationView…) are REUSED, never redeclared: this
module only adds the envelopes around them and what belongs to the protocol itself (editor state,
settings, initialization options). Tagged unions get a named ``RootModel`` so the schema and the
generated TypeScript have one name for them.

Wire format: camelCase (``CamelModel``); unknown fields are rejected (``extra="forbid"``), except
in :class:`ServerSettings`, which receives the extension's whole ``retrace`` configuration section.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, RootModel

from retrace.agent.editor_context import EditorContext
from retrace.agent.mcp.config import McpSettings
from retrace.agent.model.settings import ModelSettings
from retrace.agent.notifications import AgentEvent, BackgroundTaskView, PermissionRequest, PermissionResponse
from retrace.agent.settings import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_MAX_TOKENS,
    ContextOptions,
)
from retrace.camel import CamelModel
from retrace.engine.config import DEFAULT_MAX_FILE_BYTES, RetentionPolicy
from retrace.engine.models import (
    Checkpoint,
    ConflictResolution,
    FileChange,
    RestoreMode,
    RestoreOutcome,
    StoreStats,
    VerifyReport,
)
from retrace.protocol.agent_views import ConversationView, PermissionSettings, ToolCallView
from retrace.protocol.bookmarks import Bookmark
from retrace.protocol.git_restore import GitChoice, GitRestoreInfo, SideEffectView
from retrace.protocol.handoff import GitSettings
from retrace.protocol.metrics import MetricsSettings
from retrace.protocol.remote import RemoteSettings
from retrace.protocol.tasks import TaskRef
from retrace.protocol.timeline import (
    RunningAgentTurn,
    SessionInfo,
    SessionStory,
    StoryRow,
    StoryTurn,
    TimelineTreeParams,
    TimelineTreeResult,
)

__all__ = [
    "AgentEventPayload",
    "BackgroundListParams",
    "BackgroundListResult",
    "BackgroundStopParams",
    "BackgroundStopResult",
    "BackgroundTaskView",
    "CancelParams",
    "CancelResult",
    "CheckpointDetail",
    "CheckpointGetParams",
    "ConversationGetParams",
    "ConversationView",
    "DiffParams",
    "DiffResult",
    "EditorContext",
    "EditorSaveParams",
    "EditorSaveResult",
    "EditorState",
    "EmptyParams",
    "FileContentParams",
    "FileContentResult",
    "InitializationOptions",
    "ModelMode",
    "OpenEditor",
    "PermissionRequest",
    "PermissionResponse",
    "PromptParams",
    "PromptResult",
    "RestoreOutcomePayload",
    "RestoreParams",
    "RestoreResult",
    "RestoreStateResult",
    "ServerSettings",
    "ServerStateResult",
    "SessionInfo",
    "SessionListResult",
    "SessionStory",
    "SettingsUpdateParams",
    "SettingsUpdateResult",
    "StatsResult",
    "StoreVerifyParams",
    "StoreVerifyResult",
    "StoryRow",
    "StoryTurn",
    "SummarizeParams",
    "TimelineDidChange",
    "TimelineGetParams",
    "TimelineGetResult",
    "TimelineTreeParams",
    "TimelineTreeResult",
    "ToolCallSearchParams",
    "ToolCallSearchResult",
    "ToolCallView",
    "UndoLastRestoreParams",
]


class EmptyParams(CamelModel):
    """Params of a method that takes none (``{}`` or omitted)."""


# --------------------------------------------------------------------------- named unions


class AgentEventPayload(RootModel[AgentEvent]):
    """Payload of ``retrace/agent/event``: one agent event, tagged on ``kind``."""


class RestoreOutcomePayload(RootModel[RestoreOutcome]):
    """What a restore did (or, with ``dryRun``, would do), tagged on ``kind``."""


# --------------------------------------------------------------------------- editor state


class EditorPosition(CamelModel):
    """Zero-based line and UTF-16 character offset (VS Code ``Position``)."""

    line: int = Field(ge=0)
    character: int = Field(ge=0)


class EditorSelection(CamelModel):
    anchor: EditorPosition
    active: EditorPosition
    """Where the cursor is (the anchor is where the selection started)."""


class EditorRange(CamelModel):
    start: EditorPosition
    end: EditorPosition


class OpenEditor(CamelModel):
    """One visible or open text editor."""

    uri: str
    path: str | None
    """Workspace-relative path when the document is inside the workspace, else ``null``."""
    view_column: int | None
    is_active: bool
    is_dirty: bool
    selections: list[EditorSelection]
    visible_ranges: list[EditorRange]


class EditorState(CamelModel):
    """The editor layout the client pushes (debounced) and the server stamps on every checkpoint.

    Every field is required (nullable where it may be absent) so the same shape travels both
    ways: client → server in ``retrace/editor/didChangeState``, server → client in
    ``retrace/editor/restoreState``."""

    open_editors: list[OpenEditor]
    active_editor: str | None
    """URI of the active editor."""


class RestoreStateResult(CamelModel):
    restored: bool


class EditorSaveParams(CamelModel):
    """Server → client: save these documents so the disk matches what an applied edit produced."""

    uris: list[str]


class EditorSaveResult(CamelModel):
    saved: list[str]
    failed: list[str]


# --------------------------------------------------------------------------- settings


class ServerSettings(CamelModel):
    """The extension's ``retrace`` configuration section as the server uses it.

    Keys the server does not use (``pythonPath``, ``notifications``…) are ignored, so the client
    may send the whole section. Defaults equal package.json's."""

    model_config = ConfigDict(extra="ignore")

    model: ModelSettings = Field(default_factory=ModelSettings)
    """``retrace.model``: the provider and its settings (a plain string: the Anthropic model id,
    the setting's form before providers existed)."""
    base_url: str | None = None
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, gt=0)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    retention: RetentionPolicy = Field(default_factory=RetentionPolicy)
    excludes: list[str] = Field(default_factory=list)
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, gt=0)
    command_timeout_seconds: float = Field(default=DEFAULT_COMMAND_TIMEOUT_S, gt=0)
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    agent: ContextOptions = Field(default_factory=ContextOptions)
    mcp: McpSettings = Field(default_factory=McpSettings)
    """MCP servers (``retrace.mcp.servers``); the server starts none in an untrusted workspace."""
    git: GitSettings = Field(default_factory=GitSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)


class InitializationOptions(CamelModel):
    """``initialize`` → ``initializationOptions``."""

    model_config = ConfigDict(extra="ignore")

    store_dir: str | None = None
    """Store directory to use as given (tests, tools); when absent, the folder's one store
    (:func:`retrace.engine.store.home.default_store_dir`: the same rule as the CLI's and the
    agents' hooks)."""
    legacy_store_dir: str | None = None
    """Where an older extension kept this folder's store (its workspace storage): adopted into
    the folder's one store at start-up (:mod:`retrace.engine.store.adopt`). Ignored with
    ``storeDir``."""
    settings: ServerSettings = Field(default_factory=ServerSettings)
    client_version: str | None = None
    """The extension's version. When given, ``initialize`` fails unless it equals the server's
    (an environment left from another release); clients that omit it are served."""
    trusted: bool = Field(default=True, strict=True)
    """Whether the editor trusts the workspace. ``false``: the timeline is read-only (no agent
    turn, restore, undo or summary). Absent means trusted: clients without a trust concept (the
    CLI, headless tools) act on the user's own command."""
    multi_root: bool = Field(default=False, strict=True)
    """The client handles several workspace folders: the server opens every folder of the
    workspace (each its own store, baseline and command-line relay), not only the first; a request
    may name its folder (``folder``: the root or a unique name, see :mod:`retrace.lsp.folders`),
    and a ``retrace/timeline/didChange`` of another folder than the first carries ``folder``."""


ModelMode = Literal["live", "demo", "noKey"]
"""``live``: a configured endpoint, key or token; ``demo``: the scripted offline model (demo folder
or forced scenario); ``noKey``: nothing configured, agent turns are refused."""


class ServerStateResult(CamelModel):
    """``retrace/server/state``: what this server may do for this workspace."""

    model_mode: ModelMode
    trusted: bool
    store_dir: str | None = None
    """The store this server holds (the extension remembers it to know at its next start,
    without a server, whether the folder has Retrace sessions)."""


class SettingsUpdateParams(CamelModel):
    """Push settings explicitly (clients that do not answer ``workspace/configuration``)."""

    settings: ServerSettings


class SettingsUpdateResult(CamelModel):
    applied: bool
    restart_required: list[str]
    """Settings that only take effect after a server restart: none now (every setting applies at
    once, the capture rules in every folder); kept for clients that read it."""


# --------------------------------------------------------------------------- agent


class PromptParams(CamelModel):
    text: str = Field(min_length=1)
    session_id: str | None = None
    """Continue this session; a new session when absent."""
    context: EditorContext | None = None
    """What the user is looking at (sent when the editor-context setting is on)."""
    mentions: list[str] = Field(default_factory=list, max_length=50)
    """Workspace-relative paths the prompt mentions (``@path``): read by the server at send time."""
    retry_of: str | None = None
    """Send a failed prompt again (its message id or turn id): it carries the attachment that
    prompt carried (``context`` and ``mentions`` are then ignored)."""


class PromptResult(CamelModel):
    session_id: str
    turn_id: str


class CancelParams(CamelModel):
    session_id: str


class CancelResult(CamelModel):
    cancelled: bool
    """``false`` when nothing was running."""


class BackgroundListParams(CamelModel):
    session_id: str | None = None
    """Only this session's tasks (default: every session's)."""
    include_ended: bool = False
    """Also the tasks that ended since the server started (default: running ones only)."""


class BackgroundListResult(CamelModel):
    tasks: list[BackgroundTaskView]


class BackgroundStopParams(CamelModel):
    handle: str
    """The task's handle (``bg-1``)."""


class BackgroundStopResult(CamelModel):
    task: BackgroundTaskView
    """The task as it is now (stopped, or already ended by itself)."""


class SessionListResult(CamelModel):
    sessions: list[SessionInfo]


class ConversationGetParams(CamelModel):
    session_id: str
    limit: int | None = Field(default=None, ge=1, le=1_000_000)
    """At most this many of the newest messages of the chain (the older ones are only counted in
    ``messagesOmitted``); every message when absent."""


class SummarizeParams(CamelModel):
    id: str
    """Checkpoint id (or unique prefix)."""
    direction: Literal["from", "upTo"]
    """``from``: compress the conversation after this checkpoint; ``upTo``: before it."""


class ToolCallSearchParams(CamelModel):
    tool: str | None = None
    input_contains: str | None = None


class ToolCallSearchResult(CamelModel):
    records: list[ToolCallView]


# --------------------------------------------------------------------------- timeline


class TimelineGetParams(CamelModel):
    session_id: str | None = None
    """Only this session's checkpoints; every session's when absent."""


class TimelineGetResult(CamelModel):
    checkpoints: list[Checkpoint]
    """In commit order."""
    head: str | None
    sessions: list[SessionInfo]
    bookmarks: list[Bookmark] = Field(default_factory=list)
    """The bookmarks among ``checkpoints``, in the order a restore pick offers them: before every
    other checkpoint, newest first (``engine/bookmarks.py``)."""


class TimelineDidChange(CamelModel):
    """The head moved or a checkpoint was committed: clients refresh their timeline."""

    head: str | None
    checkpoint: Checkpoint | None = None
    """The new checkpoint, when one was committed."""
    folder: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The root of the workspace folder whose timeline changed, when it is not the first folder
    (only for a client that declared ``multiRoot``; absent for the first folder)."""
    row: StoryRow | None = None
    """The new checkpoint as the timeline shows it (clients may insert it without a refetch)."""
    turn_id: str | None = None
    """The turn the row belongs to (``None``: a row in place in its story)."""
    story_id: str | None = None
    """The session id of the story the row goes into, when the server knows it (``None``: place it
    by its turn, else next to its parent)."""
    turn: StoryTurn | None = None
    """The row's turn as the story shows it (``rows`` empty), so a client can add a turn it does
    not have yet."""


# --------------------------------------------------------------------------- checkpoints


class CheckpointGetParams(CamelModel):
    id: str
    """Checkpoint id or unique prefix."""
    task: TaskRef | None = None
    """A subagent's own timeline (and workspace copy) instead of the workspace's."""


class CheckpointDetail(CamelModel):
    checkpoint: Checkpoint
    is_head: bool
    files_changed: int
    additions: int
    deletions: int


class FileContentParams(CamelModel):
    id: str
    """Checkpoint id or unique prefix; ``"current"`` = the workspace on disk now."""
    path: str
    """Workspace-relative path."""
    task: TaskRef | None = None
    """A subagent's own timeline (and workspace copy) instead of the workspace's."""


class FileContentResult(CamelModel):
    exists: bool
    text: str | None
    """The content decoded as UTF-8; ``null`` when absent, binary or not stored."""
    binary: bool
    encoding: Literal["utf-8"] | None
    size: int
    unstored: str | None
    """Why the content is unavailable (over the size cap…), when it existed but was not stored."""


class DiffParams(CamelModel):
    from_: str = Field(alias="from")
    """Checkpoint id (or prefix) of the old side."""
    to: str | None = None
    """Checkpoint id of the new side; the current workspace when absent."""
    paths: list[str] | None = None
    """Only these workspace-relative paths."""
    max_patch_bytes: int = Field(default=200_000, gt=0)
    task: TaskRef | None = None
    """A subagent's own timeline (and workspace copy) instead of the workspace's."""


class DiffResult(CamelModel):
    files: list[FileChange]
    patch: str
    """Unified diff, cut at ``maxPatchBytes`` (see ``truncated``)."""
    truncated: bool


class RestoreParams(CamelModel):
    id: str
    """Checkpoint to restore (id or unique prefix)."""
    mode: RestoreMode
    dry_run: bool = False
    force: bool = False
    """Resolve every conflict by overwriting."""
    resolutions: dict[str, ConflictResolution] | None = None
    """Per-path conflict resolution."""
    paths: list[str] | None = None
    """Restore only these workspace-relative paths."""
    skip_conflicts: bool = False
    """Leave every conflicting file as it is and restore all the others (the outcome's
    ``skipped`` lists them); explicit ``resolutions`` still win."""
    task: TaskRef | None = None
    """Restore inside a subagent's own timeline: its workspace copy, on disk (``code`` only; the
    subagent must not be running)."""
    background_tasks: Literal["stop", "keep"] | None = None
    """What to do with running background commands (they may overwrite restored files): ``stop``
    them first or ``keep`` them running. Absent while some run: a code restore is refused with
    the error code ``backgroundTasksRunning`` (a dry run only reports them)."""
    while_agent_runs: Literal["proceed"] | None = None
    """The user accepted restoring code while another agent's turn runs (Claude Code, Gemini
    CLI: see the result's ``agentTurns``). Absent while one runs: a code restore is refused with
    the error code ``agentTurnRunning`` naming agent, session and since when (a dry run only
    reports them). A ``conversation``/``both`` restore of another agent's checkpoint is refused
    whatever this says (``conversationNotRestorable``)."""
    git_choice: GitChoice | None = None
    """When the repository's HEAD or branch moved since the target checkpoint (see the result's
    ``git``): ``filesOnly`` or ``parkFirst``. Absent then: a code restore is refused with the
    error code ``gitMoved`` (a dry run only reports it)."""


class UndoLastRestoreParams(CamelModel):
    """Undo exactly the store's last restore, whatever its mode (code, conversation or both; an
    undo too, which makes this a redo), known from the journals across restarts."""

    background_tasks: Literal["stop", "keep"] | None = None
    """As for ``retrace/checkpoint/restore``."""
    while_agent_runs: Literal["proceed"] | None = None
    """As for ``retrace/checkpoint/restore``."""
    git_choice: GitChoice | None = None
    """As for ``retrace/checkpoint/restore``: when HEAD or the branch moved since the state the
    undo goes back to, it is refused with ``gitMoved`` unless ``filesOnly`` or ``parkFirst``."""


class RestoreResult(CamelModel):
    outcome: RestoreOutcomePayload
    conversation_head: str | None
    """For ``conversation``/``both``: the conversation head after the restore."""
    terminal_notes: list[str] = Field(default_factory=list)
    """For ``conversation``/``both``: what of the session's terminal state could not be brought
    back as recorded (a secret variable: its current value kept, or left unset)."""
    background_tasks: list[BackgroundTaskView] = Field(default_factory=list)
    """Background commands running when the restore was planned (after ``stop``: the ones stopped)."""
    agent_turns: list[RunningAgentTurn] = Field(default_factory=list, exclude_if=lambda v: not v)
    """Other agents' turns running when the restore was planned (a dry run lists them: ask the
    user, then send ``whileAgentRuns: "proceed"``)."""
    ask_reason: bool = False
    """The client may offer the optional reason question ("Why?") for this restore: only a code
    restore that changed files, never an undo or a conversation-only restore, at most once per
    30 minutes (``retrace.app.restore_undo.ask_reason``)."""
    undid: str | None = None
    """``retrace/restore/undoLast``: what it undid, in words ("Undid: Restore conversation to
    “…”", or "Redid: …" when the last restore was itself an undo)."""
    restored_prompt: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """For ``conversation``/``both``: the words of the first prompt the restore left out of the
    conversation (the chat offers them again in its input)."""
    git: GitRestoreInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    """The repository at the target and now (``None``: no repository, or the target recorded none)."""
    side_effects: list[SideEffectView] = Field(default_factory=list, exclude_if=lambda v: not v)
    """Commands after the target whose effects outside the workspace this restore does not undo."""


# --------------------------------------------------------------------------- statistics


class StoreVerifyParams(CamelModel):
    quick: bool = False
    """Journals and blob presence only (no blob is read); else every blob's hash too."""


class StoreVerifyResult(CamelModel):
    report: VerifyReport


class StatsResult(CamelModel):
    store: StoreStats
    success_rate: float | None
    """Share of restores that succeeded (``null`` before the first restore)."""
    tool_calls: int
    """Tool calls in the replay buffer."""
