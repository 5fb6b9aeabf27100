"""What the agent reports while it works, and what it asks the client.

``AgentEvent`` is the payload of the ``retrace/agent/event`` notification: a tagged union on
``kind``. The agent emits these through :class:`AgentHost`; the server forwards them as plain
JSON. Declared once here; the protocol module and the generated TypeScript reuse them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import Field

from retrace.agent.conversation import UsageTotals
from retrace.agent.review import ReviewDetails
from retrace.camel import CamelModel
from retrace.engine.models import Checkpoint

ToolCallStatus = Literal["ok", "error", "denied", "interrupted", "cancelled"]


class EventBase(CamelModel):
    session_id: str
    turn_id: str | None = None


class TurnStarted(EventBase):
    kind: Literal["turnStarted"] = "turnStarted"
    text: str
    """The user's prompt."""
    attachments: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    """What was attached to it (editor context, mentioned files), one short line each."""
    agent: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """Another agent's turn recorded through its hooks (``claude-code``…); absent for Retrace's
    own. Clients show such a turn in the timeline, never as Retrace's chat or activity."""


class TextDelta(EventBase):
    kind: Literal["textDelta"] = "textDelta"
    text: str


class ToolCallStarted(EventBase):
    kind: Literal["toolCallStarted"] = "toolCallStarted"
    tool_call_id: str
    tool: str
    input: dict[str, Any]


class ToolCallFinished(EventBase):
    kind: Literal["toolCallFinished"] = "toolCallFinished"
    tool_call_id: str
    tool: str
    status: ToolCallStatus
    output: str
    """Tool output as given to the model (already capped)."""
    duration_ms: float
    changed_paths: list[str] = Field(default_factory=list)


class CheckpointCreated(EventBase):
    kind: Literal["checkpointCreated"] = "checkpointCreated"
    checkpoint: Checkpoint


class TaskProgress(EventBase):
    """A subagent of this session (the ``task`` call ``tool_call_id``) moved: it started, made
    a checkpoint in its own timeline, or ended (``status``)."""

    kind: Literal["taskProgress"] = "taskProgress"
    task_id: str
    tool_call_id: str
    description: str
    status: Literal["running", "merged", "conflicts", "finished", "failed", "cancelled"]
    tool_calls: int = 0
    """Tool calls the subagent has made so far."""
    last_tool: str | None = None


class PermissionRequested(EventBase):
    kind: Literal["permissionRequest"] = "permissionRequest"
    request_id: str
    tool: str
    input: dict[str, Any]


class Usage(EventBase):
    """One model call's tokens (``input_tokens``: the uncached input; cache writes and reads are
    counted apart, as the API reports them), and the session's totals."""

    kind: Literal["usage"] = "usage"
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    total_input_tokens: int
    total_output_tokens: int
    total_cache_creation_input_tokens: int = 0
    total_cache_read_input_tokens: int = 0
    cost_usd: float
    """The session's cost so far (of the calls whose price is known)."""
    cost_unknown: bool = False
    """Some call's price is not known (the provider has none): show the cost as unknown."""
    turn: UsageTotals | None = None
    """This turn's sums so far (what the chat shows at its end)."""


class AgentError(EventBase):
    kind: Literal["error"] = "error"
    message: str
    """One line for the user."""
    detail: str | None = None
    retrying: bool = False


class TurnFinished(EventBase):
    kind: Literal["turnFinished"] = "turnFinished"
    stop_reason: Literal["end_turn", "max_tokens", "cancelled", "error", "refusal", "max_iterations"]
    agent: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """As :attr:`TurnStarted.agent`."""


class ConversationChanged(EventBase):
    """The conversation head moved (restore, summary): clients reload ``retrace/conversation/get``."""

    kind: Literal["conversationChanged"] = "conversationChanged"
    head: str | None


class ContextCompacted(EventBase):
    """The conversation neared the model's context window: its older part was summarized
    (automatic compaction) before the turn's next model call. The originals stay in the journal;
    a restore to a checkpoint from before brings them back."""

    kind: Literal["contextCompacted"] = "contextCompacted"
    checkpoint_id: str
    """The ``summary`` checkpoint that records it."""
    summarized_messages: int
    kept_messages: int
    tokens_before: int
    """The conversation's size (input tokens) that triggered it."""
    context_window: int


BackgroundTaskState = Literal["running", "exited", "stopped"]


class BackgroundTaskView(CamelModel):
    """A background command (``run_command`` with ``background: true``) as clients see it."""

    handle: str
    """``bg-1``, ``bg-2``…: how the model and the user name it."""
    session_id: str
    command: str
    pid: int
    started_at: str
    state: BackgroundTaskState
    exit_code: int | None = None
    """The shell's exit status once it ended (negative: killed by that signal)."""
    stopped_by: str | None = None
    """Who stopped it (``user``, ``restore``, ``shutdown``), when it did not end by itself."""


class BackgroundTaskChanged(EventBase):
    """A background command started or ended (clients refresh their list of running tasks)."""

    kind: Literal["backgroundTask"] = "backgroundTask"
    task: BackgroundTaskView


AgentEvent = Annotated[
    TurnStarted
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | CheckpointCreated
    | PermissionRequested
    | Usage
    | AgentError
    | TurnFinished
    | ConversationChanged
    | ContextCompacted
    | TaskProgress
    | BackgroundTaskChanged,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- permissions

PermissionDecision = Literal["allow", "deny", "allowAlways"]
"""``allowAlways``: allow this tool for the rest of the session."""


class PermissionRequest(CamelModel):
    """Server → client request ``retrace/permission/request``: may the agent run this tool?"""

    session_id: str
    request_id: str
    tool: str
    input: dict[str, Any]
    summary: str
    """One line, e.g. ``run_command: npm test``; a cut says so (``… (1,234 more characters)``)."""
    # What the user approves: the complete command / content / edit and an honest preview.
    # (A comment, not a docstring: a described reference would be generated as a second type.)
    review: ReviewDetails


class PermissionResponse(CamelModel):
    decision: PermissionDecision


# --------------------------------------------------------------------------- the host seam


class AgentHost(Protocol):
    """What the agent needs from whoever runs it (the JSON-RPC server, a test, the CLI)."""

    async def emit(self, event: CheckpointCreated | EventBase) -> None:
        """Deliver an event (the server sends a ``retrace/agent/event`` notification)."""
        ...

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        """Ask the user; a host without a user answers from its policy."""
        ...

    def editor_state(self) -> dict[str, Any] | None:
        """Latest editor state pushed by the client (stamped on every checkpoint)."""
        ...

    def dirty_paths(self) -> set[str]:
        """Workspace-relative paths with unsaved editor changes (agent writes refuse them)."""
        ...
