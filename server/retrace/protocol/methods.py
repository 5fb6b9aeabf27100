"""One declaration per Retrace JSON-RPC method: name, direction, params model, result model.

This table is the single source of truth: the server registers its handlers from it
(``retrace.lsp.rpc``), ``retrace.protocol.export`` writes ``shared-schema/methods.json`` from it,
and the generated TypeScript's ``METHODS``/``RequestParams``/``RequestResult`` maps come from that.

Directions: ``clientRequest`` / ``clientNotification`` are sent by the client (VS Code) to the
server; ``serverRequest`` / ``serverNotification`` by the server to the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from retrace.engine.models import Checkpoint
from retrace.protocol import agents as ag
from retrace.protocol import bookmarks as bk
from retrace.protocol import handoff as h
from retrace.protocol import health as hv
from retrace.protocol import hunks as hu
from retrace.protocol import metrics as mx
from retrace.protocol import model_bridge as mb
from retrace.protocol import models as m
from retrace.protocol import prompt_restore as pr
from retrace.protocol import remote as r
from retrace.protocol import tasks as t
from retrace.protocol.file_history import FileHistoryParams, FileHistoryResult
from retrace.protocol.workspace_files import WorkspaceFilesParams, WorkspaceFilesResult

Direction = Literal["clientRequest", "clientNotification", "serverRequest", "serverNotification"]


@dataclass(frozen=True)
class MethodSpec:
    """A JSON-RPC method of Retrace's own protocol."""

    key: str
    """Identifier used in generated code (``METHODS.agentPrompt``)."""
    name: str
    """The JSON-RPC method string."""
    direction: Direction
    params: type[BaseModel]
    result: type[BaseModel] | None
    """``None`` for notifications."""
    doc: str


METHODS: tuple[MethodSpec, ...] = (
    # ---------------------------------------------------------------- agent
    MethodSpec(
        "agentPrompt",
        "retrace/agent/prompt",
        "clientRequest",
        m.PromptParams,
        m.PromptResult,
        "Start a turn (in a new session when sessionId is absent); returns at once, progress "
        "arrives as retrace/agent/event notifications.",
    ),
    MethodSpec(
        "agentCancel",
        "retrace/agent/cancel",
        "clientRequest",
        m.CancelParams,
        m.CancelResult,
        "Cancel the running turn of a session (kills a running command).",
    ),
    MethodSpec(
        "agentEvent",
        "retrace/agent/event",
        "serverNotification",
        m.AgentEventPayload,
        None,
        "One agent event (text delta, tool call, checkpoint, usage, error, turn end…).",
    ),
    MethodSpec(
        "permissionRequest",
        "retrace/permission/request",
        "serverRequest",
        m.PermissionRequest,
        m.PermissionResponse,
        "Ask the user whether the agent may run a tool.",
    ),
    MethodSpec(
        "sessionList",
        "retrace/session/list",
        "clientRequest",
        m.EmptyParams,
        m.SessionListResult,
        "Every session of the workspace, oldest first.",
    ),
    MethodSpec(
        "backgroundList",
        "retrace/background/list",
        "clientRequest",
        m.BackgroundListParams,
        m.BackgroundListResult,
        "The background commands (run_command with background: true): running ones, or every one "
        "since the server started; starts and ends arrive as backgroundTask agent events.",
    ),
    MethodSpec(
        "backgroundStop",
        "retrace/background/stop",
        "clientRequest",
        m.BackgroundStopParams,
        m.BackgroundStopResult,
        "Stop a background command (its whole process group).",
    ),
    MethodSpec(
        "toolCallsSearch",
        "retrace/toolCalls/search",
        "clientRequest",
        m.ToolCallSearchParams,
        m.ToolCallSearchResult,
        "Search the replay buffer (last 128 tool calls) by tool name and input values.",
    ),
    # ---------------------------------------------------------------- timeline & checkpoints
    MethodSpec(
        "timelineGet",
        "retrace/timeline/get",
        "clientRequest",
        m.TimelineGetParams,
        m.TimelineGetResult,
        "Checkpoints (one session or all), the head and the sessions.",
    ),
    MethodSpec(
        "timelineTree",
        "retrace/timeline/tree",
        "clientRequest",
        m.TimelineTreeParams,
        m.TimelineTreeResult,
        "The timeline as rendered: sessions → turns → described checkpoint rows (newest rows paged).",
    ),
    MethodSpec(
        "fileHistory",
        "retrace/file/history",
        "clientRequest",
        FileHistoryParams,
        FileHistoryResult,
        "The checkpoints that changed one file, newest first, paged (cursor + limit), across "
        "sessions or in one.",
    ),
    MethodSpec(
        "workspaceFiles",
        "retrace/workspace/files",
        "clientRequest",
        WorkspaceFilesParams,
        WorkspaceFilesResult,
        "Recorded (not ignored) workspace files matching a query, best first: the chat input's @ completion.",
    ),
    MethodSpec(
        "exportGit",
        "retrace/export/git",
        "clientRequest",
        h.GitExportParams,
        h.GitExportResult,
        "A checkpoint's files as a commit on a new git branch (plumbing and a temporary index: the "
        "user's working tree, index, HEAD and branches are untouched; an existing branch is refused).",
    ),
    MethodSpec(
        "attribution",
        "retrace/attribution",
        "clientRequest",
        h.AttributionParams,
        h.TraceRecord,
        "Who wrote which lines of every file at a checkpoint (agent, others, unknown) over a "
        "checkpoint range, as an Agent Trace record (snake_case keys, as that format has them).",
    ),
    MethodSpec(
        "tasksList",
        "retrace/tasks/list",
        "clientRequest",
        t.TasksListParams,
        t.TasksListResult,
        "A session's subagents (task calls): state, merged paths, conflicts and metrics.",
    ),
    MethodSpec(
        "taskTimeline",
        "retrace/tasks/timeline",
        "clientRequest",
        t.TaskParams,
        t.TaskTimelineResult,
        "One subagent's own checkpoints (its timeline in its own store), oldest first.",
    ),
    MethodSpec(
        "taskApply",
        "retrace/tasks/apply",
        "clientRequest",
        t.TaskParams,
        t.TaskApplyResult,
        "Merge a subagent's net change into the workspace again (three-way; conflicts reported) "
        "as one checkpoint of the parent session.",
    ),
    MethodSpec(
        "taskResume",
        "retrace/tasks/resume",
        "clientRequest",
        t.TaskParams,
        t.TaskResumeResult,
        "Continue an interrupted, failed or cancelled subagent in its own copy and timeline; when "
        "it ends well its change is merged like retrace/tasks/apply.",
    ),
    MethodSpec(
        "taskDiscard",
        "retrace/tasks/discard",
        "clientRequest",
        t.TaskParams,
        t.TaskDiscardResult,
        "Delete a finished subagent's workspace copy and timeline.",
    ),
    MethodSpec(
        "timelineDidChange",
        "retrace/timeline/didChange",
        "serverNotification",
        m.TimelineDidChange,
        None,
        "A checkpoint was committed or the head moved.",
    ),
    MethodSpec(
        "checkpointGet",
        "retrace/checkpoint/get",
        "clientRequest",
        m.CheckpointGetParams,
        m.CheckpointDetail,
        "One checkpoint with its diff statistics.",
    ),
    MethodSpec(
        "checkpointFileContent",
        "retrace/checkpoint/fileContent",
        "clientRequest",
        m.FileContentParams,
        m.FileContentResult,
        'A file\'s content at a checkpoint (id "current" = the workspace now), for diff views.',
    ),
    MethodSpec(
        "checkpointDiff",
        "retrace/checkpoint/diff",
        "clientRequest",
        m.DiffParams,
        m.DiffResult,
        "Changed files and a unified patch between two checkpoints (or a checkpoint and now).",
    ),
    MethodSpec(
        "checkpointRestore",
        "retrace/checkpoint/restore",
        "clientRequest",
        m.RestoreParams,
        m.RestoreResult,
        "Restore code, conversation or both (dryRun previews); code goes through "
        "workspace/applyEdit when the client supports it.",
    ),
    MethodSpec(
        "restoreUndoLast",
        "retrace/restore/undoLast",
        "clientRequest",
        m.UndoLastRestoreParams,
        m.RestoreResult,
        "Restore the code to the state saved just before the last restore of this server session "
        "(unsaved editor text included); an error when there was none.",
    ),
    MethodSpec(
        "restoreHunks",
        "retrace/restore/hunks",
        "clientRequest",
        hu.HunksParams,
        hu.HunksResult,
        "The hunks between a checkpoint's version of one text file and its current text (the "
        "open buffer, else the disk), with the current text's hash a hunk restore must name.",
    ),
    MethodSpec(
        "restoreHunk",
        "retrace/restore/hunk",
        "clientRequest",
        hu.RestoreHunkParams,
        hu.RestoreHunkResult,
        "Put one hunk's checkpoint lines back through workspace/applyEdit (a restore checkpoint; "
        "undoable with retrace/restore/undoLast); a file changed since is hunkConflict, nothing "
        "written.",
    ),
    MethodSpec(
        "restoreToPrompt",
        "retrace/restore/toPrompt",
        "clientRequest",
        pr.RestoreToPromptParams,
        pr.RestoreToPromptResult,
        "Restore code, conversation or both to before a chat prompt, or to the end of its turn "
        "(the server resolves the checkpoint and conversation head; dryRun previews).",
    ),
    MethodSpec(
        "bookmarkCreate",
        "retrace/bookmark/create",
        "clientRequest",
        bk.BookmarkCreateParams,
        bk.BookmarkCreateResult,
        "A named checkpoint of the state now (every change since the last checkpoint; while an "
        "agent's turn runs, the state its last checkpoint recorded); a bad name is refused.",
    ),
    MethodSpec(
        "bookmarkName",
        "retrace/bookmark/name",
        "clientRequest",
        bk.BookmarkNameParams,
        bk.BookmarkNameResult,
        "Name an existing checkpoint (a bookmark; the last name wins, an empty one removes it).",
    ),
    # ---------------------------------------------------------------- conversation
    MethodSpec(
        "conversationGet",
        "retrace/conversation/get",
        "clientRequest",
        m.ConversationGetParams,
        m.ConversationView,
        "A session's conversation from the root to its head.",
    ),
    MethodSpec(
        "conversationSummarize",
        "retrace/conversation/summarize",
        "clientRequest",
        m.SummarizeParams,
        Checkpoint,
        "Compress the conversation from / up to a checkpoint; returns the summary checkpoint.",
    ),
    # ---------------------------------------------------------------- editor's language models
    MethodSpec(
        "modelChat",
        "retrace/model/chat",
        "serverRequest",
        mb.ModelChatParams,
        mb.ModelChatResult,
        "One model request of the vscode-lm provider, answered by the editor's vscode.lm; the "
        "reply's text streams as retrace/model/chatDelta; $/cancelRequest cancels it.",
    ),
    MethodSpec(
        "modelChatDelta",
        "retrace/model/chatDelta",
        "clientNotification",
        mb.ModelChatDelta,
        None,
        "A piece of a retrace/model/chat reply's text, as it streams.",
    ),
    # ---------------------------------------------------------------- editor
    MethodSpec(
        "editorDidChangeState",
        "retrace/editor/didChangeState",
        "clientNotification",
        m.EditorState,
        None,
        "The client's editor layout (debounced); stamped on every later checkpoint.",
    ),
    MethodSpec(
        "editorSave",
        "retrace/editor/save",
        "serverRequest",
        m.EditorSaveParams,
        m.EditorSaveResult,
        "Save documents an applied restore edit touched, so the disk matches the checkpoint.",
    ),
    MethodSpec(
        "editorRestoreState",
        "retrace/editor/restoreState",
        "serverRequest",
        m.EditorState,
        m.RestoreStateResult,
        "Reopen editors and restore selections and scroll positions of a checkpoint.",
    ),
    # ---------------------------------------------------------------- housekeeping
    MethodSpec(
        "stats",
        "retrace/stats",
        "clientRequest",
        m.EmptyParams,
        m.StatsResult,
        "Storage used, capture/restore latencies and restore success rate.",
    ),
    MethodSpec(
        "storeVerify",
        "retrace/store/verify",
        "clientRequest",
        m.StoreVerifyParams,
        m.StoreVerifyResult,
        "Check the store's journals, manifests and blob hashes; report damage and the checkpoints "
        "it affects (read-only; repairing is `retrace verify --repair` with the server stopped).",
    ),
    MethodSpec(
        "serverState",
        "retrace/server/state",
        "clientRequest",
        m.EmptyParams,
        m.ServerStateResult,
        "The model mode (live | demo | noKey) and whether the workspace is trusted; the client "
        "shows a demo banner or the add-a-key welcome from it.",
    ),
    # ---------------------------------------------------------------- remote sync
    MethodSpec(
        "remoteStatus",
        "retrace/remote/status",
        "clientRequest",
        r.RemoteParams,
        r.RemoteStatusResult,
        "The remote's local record (last push, last error, what is pending) and what this "
        "server's scheduler is doing; no network.",
    ),
    MethodSpec(
        "remotePush",
        "retrace/remote/push",
        "clientRequest",
        r.RemoteParams,
        r.RemotePushResult,
        "Push now (one push at a time: waits for one that begins after the request); progress "
        "arrives as retrace/remote/progress.",
    ),
    MethodSpec(
        "remotePull",
        "retrace/remote/pull",
        "clientRequest",
        r.RemoteParams,
        r.RemotePullResult,
        "Append what was pushed since to the sessions opened from the remote.",
    ),
    MethodSpec(
        "remoteSessions",
        "retrace/remote/sessions",
        "clientRequest",
        r.RemoteParams,
        r.RemoteSessionsResult,
        "The sessions in the bucket under this workspace's prefix (machine, workspace, time, size).",
    ),
    MethodSpec(
        "remoteOpen",
        "retrace/remote/open",
        "clientRequest",
        r.RemoteOpenParams,
        r.RemoteOpenResult,
        "Import a remote session into this store (timeline first; its blobs are fetched when "
        "needed) and show it in the timeline.",
    ),
    MethodSpec(
        "remoteProgress",
        "retrace/remote/progress",
        "serverNotification",
        r.RemoteSyncView,
        None,
        "The sync scheduler's state changed: pushing (with progress), synced, error (with the next retry).",
    ),
    MethodSpec(
        "metricsGet",
        "retrace/metrics/get",
        "clientRequest",
        mx.MetricsGetParams,
        mx.MetricsSnapshot,
        "The metrics snapshot: the Prometheus text exposition and the same numbers structured, "
        "with the storage time series and latency samples (what a health view draws).",
    ),
    MethodSpec(
        "healthGet",
        "retrace/health/get",
        "clientRequest",
        m.EmptyParams,
        hv.HealthView,
        "The health view: the metrics made ready to draw (storage against budget and the 80/90 % "
        "lines, latency histograms with p50/p95/p99 against the targets, success rate, labelled "
        "restores by reason, the slowest checkpoints).",
    ),
    MethodSpec(
        "restoreReason",
        "retrace/restore/reason",
        "clientRequest",
        mx.RestoreReasonParams,
        mx.RestoreReasonResult,
        "Record the user's optional reason for a restore (journaled with the restore's checkpoint; "
        "counted in retrace_restores_total).",
    ),
    MethodSpec(
        "storeGc",
        "retrace/store/gc",
        "clientRequest",
        m.EmptyParams,
        mx.StoreGcResult,
        "Apply retention and delete unreferenced blobs now (refused while a turn runs).",
    ),
    MethodSpec(
        "storageAlert",
        "retrace/storage/alert",
        "serverNotification",
        mx.StorageAlert,
        None,
        "Checkpoint storage rose to 80 % (warning) or 90 % (urgent) of its budget (once per crossing).",
    ),
    MethodSpec(
        "settingsUpdate",
        "retrace/settings/update",
        "clientRequest",
        m.SettingsUpdateParams,
        m.SettingsUpdateResult,
        "Apply settings now (the server also pulls them on workspace/didChangeConfiguration).",
    ),
    # ---------------------------------------------------------------- other agents
    MethodSpec(
        "agentsIntegrate",
        "retrace/agents/integrate",
        "clientRequest",
        ag.AgentIntegrateParams,
        ag.AgentIntegrateResult,
        "Write (or with remove take out) Retrace's hooks in another agent's project settings "
        "(Claude Code: .claude/settings.local.json, Gemini CLI: .gemini/settings.json), so each of "
        "its tool calls becomes a checkpoint; the user's other settings stay. Refused in an "
        "untrusted workspace; a settings file Retrace cannot rewrite safely is an error "
        "(agentSettingsInvalid) and stays untouched.",
    ),
)

BY_NAME: dict[str, MethodSpec] = {spec.name: spec for spec in METHODS}

EXTRA_MODELS: tuple[type[BaseModel], ...] = (m.InitializationOptions, m.ServerSettings)
"""Models on the wire outside Retrace's own methods (``initialize`` options, configuration)."""


def spec(name: str) -> MethodSpec:
    """The spec of a method by its JSON-RPC name (KeyError for an unknown one)."""
    return BY_NAME[name]
