"""THE journal format: every line of a session journal is one of these events.

One discriminated union on ``type``; every event carries ``v`` (format version: 2 since every
line carries its own checksum, :mod:`.seal`; 1 — or absent, on lines written before it
existed — for legacy lines) and ``ts`` (seconds since the epoch). Events are written and read
only through the store (``Engine.append_event`` / ``Engine.events``), which validate them here.

Reading stays compatible forever (``tests/engine/test_journal_format.py`` reads a committed v1
store): fields are only ever added with defaults, unknown extra fields are kept, and an event
``type`` this version does not know is passed through untouched (a newer writer's), never
treated as damage. A KNOWN type whose fields do not validate is damage: it is skipped and
reported, the rest of the journal still loads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from retrace.camel import CamelModel
from retrace.engine.bookmark_name import BookmarkNameError, clean_name
from retrace.engine.models import Checkpoint, TerminalState
from retrace.engine.workspace import EscapeError, stored_rel

JOURNAL_VERSION = 2
"""The version the writer stamps on every line (with the line's checksum)."""
LEGACY_VERSION = 1
"""What a line without ``v`` means (written before the field existed)."""


class _Event(CamelModel):
    model_config = ConfigDict(extra="allow")

    v: int = JOURNAL_VERSION
    """A line without ``v`` reads as :data:`LEGACY_VERSION` (:func:`parse_event`)."""
    ts: float = Field(default_factory=time.time)


class ParentCopy(CamelModel):
    """A copy of the parent checkpoint's own manifest data (its delta, or its snapshot blob id
    when it has one), carried by its child so that ONE damaged journal line loses only its own
    checkpoint: the parent's manifest, and so every descendant's, can still be rebuilt."""

    model_config = ConfigDict(extra="allow")

    id: str
    parent: str | None
    kind: str | None = None
    created_at: str | None = None
    delta: dict[str, Any] | None = None
    snapshot: str | None = None


class LocalOrigin(CamelModel):
    """Stamped by this store on the checkpoint lines it commits (:mod:`retrace.engine.history.origin`):
    its local creation number and a keyed hash proving the line is this store's."""

    seq: int
    mac: str


class CheckpointEvent(_Event):
    """A committed checkpoint: its metadata, its delta against its parent (``None`` for a
    baseline), the blob id of a full manifest snapshot when one was written, and a copy of
    its parent's manifest data (absent on lines written before it existed)."""

    type: Literal["checkpoint"] = "checkpoint"
    checkpoint: Checkpoint
    delta: dict[str, Any] | None
    snapshot: str | None
    parent_delta: ParentCopy | None = None
    origin: LocalOrigin | None = None


class CheckpointLostEvent(_Event):
    """Written by ``verify --repair``: checkpoint ``id`` cannot be rebuilt (its data was lost to
    damage that was quarantined). A known loss: reported as information, no longer as damage."""

    type: Literal["checkpointLost"] = "checkpointLost"
    id: str
    reason: str


class TurnEvent(_Event):
    """A user prompt started a turn."""

    type: Literal["turn"] = "turn"
    turn_id: str
    text: str
    created_at: str | None = None
    head_checkpoint: str | None = None
    """The store's head when the prompt was sent: the code "before this prompt" (absent in
    journals written before it was recorded)."""


class TurnEndEvent(_Event):
    """A turn ended (an external agent's ``Stop`` hook; ``reason`` as the agent reported it). A
    turn of an external session with no ``turnEnd`` is running, or its agent died mid-turn."""

    type: Literal["turnEnd"] = "turnEnd"
    turn_id: str
    reason: str = Field(default="stop", max_length=64)


AGENT_NAME = r"^[a-z][a-z0-9-]{0,31}$"
"""An external agent's name as its hook adapter spells it (``claude-code``, ``gemini-cli``)."""


class AgentSessionEvent(_Event):
    """This session records another agent's work through its hooks: the session's first line.
    Its checkpoints are that agent's tool calls (``kind == "tool"``, ``meta["agent"]`` set), the
    changes others made between them (``external``), and its turns are the agent's prompts. Such a
    session has no Retrace conversation: only its code can be restored."""

    type: Literal["agentSession"] = "agentSession"
    agent: str = Field(pattern=AGENT_NAME)
    external_session_id: str = Field(max_length=256)
    """The agent's own session id (Claude Code's ``session_id``)."""
    cwd: str | None = Field(default=None, max_length=4096)
    transcript_path: str | None = Field(default=None, max_length=4096)


class MessageEvent(_Event):
    """A conversation message; appending one moves the conversation head to it."""

    type: Literal["message"] = "message"
    id: str
    parent: str | None
    role: Literal["user", "assistant"]
    content: list[dict[str, Any]]
    turn_id: str | None = None
    kind: str = "message"
    created_at: str | None = None
    attachments: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    """A prompt's attachment summary (editor context, mentioned files) as the chat shows it; the
    attached text itself is in ``content``. Absent in older journals and for other messages."""


class PromptWithdrawnEvent(_Event):
    """A turn ended without any reply to its prompt (an error, a stop, a crash): the
    conversation head moves back to the prompt's parent, and clients offer its text again."""

    type: Literal["promptWithdrawn"] = "promptWithdrawn"
    message_id: str
    turn_id: str | None = None
    reason: str = "error"
    text: str = ""
    created_at: str | None = None


class UsageEvent(_Event):
    """Token usage and cost of one model call (``input_tokens``: the uncached input tokens; prompt
    cache writes and reads apart, as the Messages API reports them)."""

    type: Literal["usage"] = "usage"
    turn_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = 0.0
    """``None``: the provider's price is not known (the client then shows the cost as unknown)."""
    model: str | None = None


class ToolCallIntentEvent(_Event):
    """The agent is about to run a tool (journaled before it runs)."""

    type: Literal["toolCallIntent"] = "toolCallIntent"
    id: str
    tool: str
    input: dict[str, Any]
    turn_id: str | None = None
    message_id: str | None = None
    created_at: str | None = None


class ToolCallResultEvent(_Event):
    """How a tool call ended."""

    type: Literal["toolCallResult"] = "toolCallResult"
    id: str
    tool: str = ""
    status: str | None = None
    output: str | None = None
    is_error: bool = False
    duration_ms: float = 0.0
    changed_paths: list[str] = Field(default_factory=list)
    turn_id: str | None = None


class ConversationHeadEvent(_Event):
    """The conversation head moved (restore, summary, compaction)."""

    type: Literal["conversationHead"] = "conversationHead"
    head: str | None
    reason: str
    checkpoint_id: str | None = None
    note_from: str | None = None
    terminal: TerminalState | None = None
    """The session's shell state from here on (a restore moves it with the conversation)."""
    summarized: str | None = None
    """Compaction: the last original message the summary appended next stands for (clients
    still show the originals up to it before the summary)."""
    code_from: str | None = None
    """``reason: "codeRestore"`` (a code-only restore; the head did not move): the checkpoint the
    model last saw the files at; the next prompt names the files that differ from it, restored
    to ``checkpoint_id``."""


class RestoreIntentEvent(_Event):
    """A disk restore is about to change ``paths`` (the head is the pre-restore state)."""

    type: Literal["restoreIntent"] = "restoreIntent"
    restore_id: str
    pre_head: str
    target_id: str
    paths: list[str]

    @field_validator("paths")
    @classmethod
    def _inside(cls, paths: list[str]) -> list[str]:
        """Recovery rolls these paths back: each must be a workspace path (else the event is
        damage, skipped and reported, never an instruction)."""
        for p in paths:
            try:
                stored_rel(p)
            except EscapeError as exc:
                raise ValueError(str(exc)) from None
        return paths


class RestoreDoneEvent(_Event):
    """The outcome of the restore ``restore_id``."""

    type: Literal["restoreDone"] = "restoreDone"
    restore_id: str
    outcome: str


class RestoreStatsEvent(_Event):
    """Statistics of one restore that changed (or tried to change) the workspace: ``kind`` is
    the outcome (``applied``, ``failed``, ``conflict``: refused over unresolved conflicts)."""

    type: Literal["restore"] = "restore"
    duration_ms: float
    kind: str
    target_id: str | None = None
    mode: str | None = None
    """``code``, ``both`` or ``hunk`` (one hunk restored through the editor); absent on lines
    written before it existed."""
    checkpoint_id: str | None = None
    """The ``restore`` checkpoint it committed (``applied`` only)."""
    conflicts: dict[str, int] = Field(default_factory=dict)
    """Conflicting files by how they ended: ``overwrite``, ``skip``, ``merge``, ``unresolved``,
    ``failed``."""


RestoreReason = Literal["wrongApproach", "brokeTests", "unwantedChanges", "offTrack", "other"]
"""Why the user restored (optional, one click): the approach was wrong, it broke the tests,
unwanted file changes, the conversation went off track, something else."""


class RestoreReasonEvent(_Event):
    """The user's reason for a restore, given after it (never required). ``checkpoint_id`` is
    the restore's own checkpoint, or the target of a conversation-only restore (which makes
    none); the event is written to that checkpoint's session journal."""

    type: Literal["restoreReason"] = "restoreReason"
    checkpoint_id: str
    reason: RestoreReason
    mode: str | None = None


class RestoreRecordEvent(_Event):
    """One restore as its undo needs it (any mode; an undo is a restore too): where the code
    was before it (``code_before``: its safety checkpoint or the head it replaced; ``None``: no
    code changed) and, when it moved a conversation, that session's head and terminal before it
    (``session_id`` set; ``conversation_before`` ``None`` is an empty conversation).
    ``checkpoint_id`` is the ``restore`` checkpoint it committed; ``undo``: it undid the one
    before (so undoing it is a redo)."""

    type: Literal["restoreRecord"] = "restoreRecord"
    mode: str
    target_id: str
    label: str = ""
    checkpoint_id: str | None = None
    code_before: str | None = None
    session_id: str | None = None
    conversation_before: str | None = None
    terminal_before: TerminalState | None = None
    undo: bool = False


class CheckpointFailedEvent(_Event):
    """A checkpoint could not be recorded (the turn paused). Best effort: when the journal
    itself cannot be written, the failure is not on record."""

    type: Literal["checkpointFailed"] = "checkpointFailed"
    kind: str
    error: str = ""
    tool_call_id: str | None = None
    turn_id: str | None = None


class TaskEvent(_Event):
    """A subagent (the ``task`` tool) started or ended: the topology of a parent session's
    children, rebuilt from its journal. ``store`` is the child's own store, relative to the
    parent store (its workspace copy lives beside it); ``base`` the parent checkpoint the child
    started from. A ``running`` event with no later one for the same ``task_id`` is a child a
    crash interrupted."""

    type: Literal["task"] = "task"
    task_id: str
    call_id: str
    status: Literal[
        "running", "merged", "conflicts", "finished", "failed", "cancelled", "interrupted", "discarded"
    ]
    """``finished``: a resumed child ended well but was not merged (its parent was busy): apply it."""
    description: str = ""
    store: str = ""
    child_session_id: str = ""
    base: str | None = None
    turn_id: str | None = None
    merged: list[str] = Field(default_factory=list)
    conflicts: list[dict[str, Any]] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    tools: list[str] | None = None
    """The tools the child may use (``None``: every tool but ``task``)."""


class PermissionAlwaysEvent(_Event):
    """An ``allowAlways`` answer (kept in memory for the session; journaled for the record):
    ``after`` is the newest checkpoint when it was given (a conversation restore to a checkpoint
    that ``after`` is not a strict ancestor of drops it). ``revoked``: such a restore dropped it;
    ``checkpoint_id`` is then that restore's target."""

    type: Literal["permissionAlways"] = "permissionAlways"
    tool: str
    after: str | None = None
    revoked: bool = False
    checkpoint_id: str | None = None


class CheckpointNameEvent(_Event):
    """A person named an existing checkpoint (a bookmark): the last such event for a checkpoint
    wins, an empty ``name`` removes its name. Validated on replay by the name rule
    (:mod:`retrace.engine.bookmark_name`): a line that breaks it is damage, skipped and reported."""

    type: Literal["checkpointName"] = "checkpointName"
    checkpoint_id: str = Field(min_length=1, max_length=200)
    name: str = Field(max_length=400)

    @field_validator("name")
    @classmethod
    def _name_rule(cls, name: str) -> str:
        try:
            cleaned = clean_name(name)
        except BookmarkNameError as exc:
            raise ValueError(str(exc)) from None
        if cleaned != name:
            raise ValueError("a stored bookmark name has no surrounding white space")
        return name


JournalEvent = Annotated[
    CheckpointEvent
    | CheckpointLostEvent
    | TurnEvent
    | MessageEvent
    | PromptWithdrawnEvent
    | UsageEvent
    | ToolCallIntentEvent
    | ToolCallResultEvent
    | ConversationHeadEvent
    | RestoreIntentEvent
    | RestoreDoneEvent
    | RestoreStatsEvent
    | RestoreReasonEvent
    | RestoreRecordEvent
    | CheckpointFailedEvent
    | TaskEvent
    | TurnEndEvent
    | AgentSessionEvent
    | PermissionAlwaysEvent
    | CheckpointNameEvent,
    Field(discriminator="type"),
]

_ADAPTER: TypeAdapter[JournalEvent] = TypeAdapter(JournalEvent)
EVENT_MODELS: tuple[type[_Event], ...] = get_args(get_args(JournalEvent)[0])
"""Every model of the union, in its order."""
MODEL_OF: dict[str, type[_Event]] = {model.model_fields["type"].default: model for model in EVENT_MODELS}
"""Type name on disk → its model: the only map from a line's ``type`` string to an event."""
KNOWN_TYPES = frozenset(MODEL_OF)

EventModel = type[_Event]
"""An event model class (what readers filter by: ``skip=(CheckpointEvent,)``)."""


def type_names(models: Iterable[EventModel]) -> frozenset[str]:
    """The on-disk type names of ``models`` (for readers that filter lines before parsing)."""
    return frozenset(model.model_fields["type"].default for model in models)


def type_markers(models: Iterable[EventModel]) -> tuple[bytes, ...]:
    """The bytes a journal line holding an event of one of ``models`` must contain: its type name
    as a JSON string (the writer never escapes these ASCII names). A line with none of them
    cannot hold such an event and may be passed over undecoded; a line with one may still be
    another type (the name inside a text), so it is decoded and filtered as usual."""
    return tuple(f'"{name}"'.encode() for name in sorted(type_names(models)))


def model_of(raw: Mapping[str, Any]) -> EventModel | None:
    """The model a raw journal line (a parsed JSON object) claims to be, ``None`` for a type this
    version does not know. For the line-level readers that keep lines as bytes (replay, gc,
    repair, the bucket check): they branch on the model class, never on the type string."""
    kind = raw.get("type")
    return MODEL_OF.get(kind) if isinstance(kind, str) else None


class EventSchemaError(ValueError):
    """A journal event of a known type whose fields do not match its model."""


def parse_event(raw: dict[str, Any]) -> JournalEvent | None:
    """The typed event of one journal line; ``None`` for a type this version does not know.
    Raises :class:`EventSchemaError` when a known type does not validate."""
    if raw.get("type") not in KNOWN_TYPES:
        return None
    if "v" not in raw:
        raw = {**raw, "v": LEGACY_VERSION}
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise EventSchemaError(f"{raw.get('type')} event: {where}: {first.get('msg')}") from None


def event_json(event: JournalEvent | dict[str, Any]) -> dict[str, Any]:
    """The wire form of an event (camelCase keys, ``null`` kept; a checkpoint's in-memory
    ``damage`` never stored). A plain dict is validated first when its type is known."""
    if isinstance(event, dict):
        typed = parse_event(event)
        if typed is None:
            return dict(event)
        event = typed
    if not isinstance(event, CheckpointEvent):
        return event.model_dump(mode="json", by_alias=True)
    out = event.model_dump(mode="json", by_alias=True, exclude={"checkpoint": {"damage"}})
    # The deltas are maps keyed by workspace path, already plain JSON values (delta_to_json).
    # pydantic's JSON mode turns a key holding a lone surrogate (a file name that is not valid
    # UTF-8, decoded with surrogateescape) into replacement characters, so the next replay
    # would name another file; they are put back as they are (json.dumps escapes them).
    out["delta"] = event.delta
    if event.parent_delta is not None and out.get("parentDelta") is not None:
        out["parentDelta"]["delta"] = event.parent_delta.delta
    return out
