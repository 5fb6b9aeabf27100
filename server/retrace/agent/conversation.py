"""The conversation of one session: a tree of messages kept in the engine's session journal.

Journal events (plain JSON, appended through ``engine.append_event``):

* ``message`` {id, parent, role, content: [blocks], turnId, kind, createdAt} — appending one moves
  the head to it. ``kind``: prompt | assistant | toolResults | restoreResults | summary.
* ``conversationHead`` {head, reason, checkpointId?, noteFrom?, terminal?} — the head moved
  (restore, summary, compaction). Nothing is ever deleted: new messages hang off the new head. A restore
  carries the session's terminal state from then on (:mod:`retrace.agent.terminal`).
* ``checkpoint`` — the session's terminal state as recorded by its latest checkpoint.
* ``promptWithdrawn`` {messageId, turnId, reason, text} — a turn ended without any reply to its
  prompt (model error, cancel, crash): the head moves back to the prompt's parent, so the prompt is
  never sent again unless the user sends it again; the chat keeps showing it with a retry action.
* ``usage`` {turnId, inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens,
  costUsd} — totals that survive restores.
* ``toolCallIntent`` / ``toolCallResult`` — see :mod:`retrace.agent.loop`.

The history is the chain root → head. :meth:`Conversation.api_messages` turns it into what the
Messages API accepts: a prompt directly followed by another prompt (it never got a reply, e.g. in
a journal written before withdrawals existed) is left out, consecutive same-role messages are
merged (tool results first), and a tool
batch left open (a crash, a cancel, a restore into the middle of a batch) gets a synthetic
result for every unanswered call. The agent does not check it against the API's rules: the real
API judges real requests, and the fake Messages API (:mod:`retrace.offline.validation`) rejects an
invalid one in the tests and the offline demo.

A checkpoint's conversation cursor is ``"<messageId>"`` or, for a tool checkpoint,
``"<assistantMessageId>#<toolCallId>"``: inside that message's tool batch, just after that call
(``"<assistantMessageId>#"``: before its first call, e.g. an external checkpoint).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from retrace import credentials
from retrace.agent.terminal import TerminalSession, revive
from retrace.camel import CamelModel
from retrace.engine.models import TerminalState
from retrace.engine.store.events import (
    CheckpointEvent,
    ConversationHeadEvent,
    JournalEvent,
    MessageEvent,
    PromptWithdrawnEvent,
    ToolCallIntentEvent,
    ToolCallResultEvent,
    TurnEvent,
    UsageEvent,
)

log = logging.getLogger(__name__)

Role = Literal["user", "assistant"]

NOT_RUN_RESTORED = "not run: the conversation was restored to before this call"
NOT_RUN_STOPPED = "not run: the turn stopped before this call"
INTERRUPTED = "interrupted: side effects unknown; the workspace was re-captured"
CANCELLED = "cancelled by the user"


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def parse_cursor(cursor: str) -> tuple[str, str | None]:
    """(message id, tool call id) of a conversation cursor. The call id is ``None`` for a plain
    message cursor and ``""`` for "inside the batch, before its first call"."""
    message_id, sep, tool_call_id = cursor.partition("#")
    return message_id, tool_call_id if sep else None


# --------------------------------------------------------------------------- views (wire)


class MessageView(CamelModel):
    id: str
    role: Role
    turn_id: str | None = None
    kind: str = "message"
    """prompt | assistant | toolResults | restoreResults | summary."""
    content: list[dict[str, Any]]
    """Content blocks exactly as sent to the model (plain JSON)."""
    created_at: str | None = None
    attachments: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    """A prompt's attachments as the chat lists them (``app.py:12-20 (selection)``, ``@utils.py``)."""


class WithdrawnPrompt(CamelModel):
    """A prompt whose turn ended without a reply; it is no longer part of what the model sees."""

    message_id: str
    turn_id: str | None = None
    text: str
    reason: str
    """The turn's stop reason: error | cancelled | interrupted | refusal…"""
    after: str | None = None
    """The message it followed (``None``: the start of the conversation)."""


class UsageTotals(CamelModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    """The sum of the calls' known prices."""
    cost_unknown: bool = False
    """Some call's price is not known (its provider has none): the sum is a lower bound."""

    def plus(self, event: UsageEvent) -> UsageTotals:
        """These sums and one journaled ``usage`` event's numbers."""
        return UsageTotals(
            input_tokens=self.input_tokens + event.input_tokens,
            output_tokens=self.output_tokens + event.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + event.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + event.cache_read_input_tokens,
            cost_usd=self.cost_usd + (event.cost_usd or 0.0),
            cost_unknown=self.cost_unknown or event.cost_usd is None,
        )


class ConversationView(CamelModel):
    """A session's conversation as the client shows it: the chain root → head."""

    session_id: str
    head: str | None
    messages: list[MessageView] = Field(default_factory=list)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    cost_usd: float = 0.0
    running: bool = False
    withdrawn: list[WithdrawnPrompt] = Field(default_factory=list)
    """Unanswered prompts on this branch (shown as failed turns with a retry action)."""
    tool_statuses: dict[str, str] = Field(default_factory=dict)
    """How each finished tool call of the messages sent ended (tool_use id → ok | error | denied
    | interrupted | cancelled), from the journal: the client shows this, never guesses it."""
    messages_omitted: int = 0
    """The chain's older messages not sent (a ``limit`` was asked for)."""
    turn_usage: dict[str, UsageTotals] = Field(default_factory=dict)
    """Tokens and cost of each turn of the messages sent (turn id → its model calls' sums)."""
    tool_checkpoints: dict[str, str] = Field(default_factory=dict)
    """The checkpoint each tool call of the messages sent ended in (tool_use id → checkpoint id)."""


# --------------------------------------------------------------------------- state


@dataclass
class StoredMessage:
    id: str
    parent: str | None
    role: Role
    content: list[dict[str, Any]]
    turn_id: str | None
    kind: str
    created_at: str | None
    note_from_before: str | None = None
    """For a prompt: the pending restore note it consumed (given back if it is withdrawn)."""
    code_note_before: tuple[str, str] | None = None
    """For a prompt: the pending code-restore note it consumed (given back if withdrawn)."""
    attachments: list[str] = field(default_factory=list)


@dataclass
class ToolCallRecord:
    id: str
    tool: str
    input: dict[str, Any]
    turn_id: str | None
    message_id: str | None
    started_at: float
    status: str | None = None
    output: str | None = None
    is_error: bool = False
    duration_ms: float = 0.0
    checkpoint_id: str | None = None
    changed_paths: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    """In-memory state of one session, rebuilt from (and kept in step with) its journal."""

    session_id: str
    messages: dict[str, StoredMessage] = field(default_factory=dict)
    head: str | None = None
    tool_calls: dict[str, ToolCallRecord] = field(default_factory=dict)
    """Every tool call of the session by id, in intent order."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    turn_usage: dict[str, UsageTotals] = field(default_factory=dict)
    """Each turn's own sums (what the chat shows at the end of a turn)."""
    note_from: str | None = None
    """Checkpoint of a conversation restore whose file changes the next prompt must mention."""
    code_note: tuple[str, str] | None = None
    """A code-only restore the next prompt must mention: (what the model last saw, target)."""
    title: str | None = None
    created_at: str | None = None
    withdrawn: list[WithdrawnPrompt] = field(default_factory=list)
    terminal: TerminalState | None = None
    """The terminal state as last recorded (a checkpoint of this session, a restore)."""
    shell: TerminalSession | None = None
    """The live terminal (with the values of secret variables), made from :attr:`terminal` on
    first use (:meth:`terminal_session`)."""
    compacted: dict[str, str] = field(default_factory=dict)
    """Compaction summary message id → the last original message it stands for."""
    _compacting: str | None = None
    turn_heads: dict[str, str | None] = field(default_factory=dict)
    """Each turn (in journal order) → the store's head when its prompt was sent (``None``: not
    recorded). What "before this prompt" restores (:mod:`retrace.app.prompt_points`)."""
    measured: tuple[str | None, int] | None = None
    """(head the latest model request was sent at, its input tokens as the API counted them:
    uncached + cache reads + cache writes). In memory only: what compaction measures against."""

    @classmethod
    def from_events(cls, session_id: str, events: Iterable[JournalEvent]) -> Conversation:
        conv = cls(session_id)
        for number, event in enumerate(events, 1):
            try:
                conv.apply(event)
            except (KeyError, TypeError, ValueError) as e:  # an event the state cannot take (a
                # withdrawal of an unknown prompt) must not lose the session
                log.warning(
                    "session %s: journal event %d (%s) skipped: %r", session_id, number, event.type, e
                )
        return conv

    def apply(self, event: JournalEvent) -> None:
        """Fold one journal event into the state (events the conversation does not use are ignored)."""
        match event:
            case MessageEvent():
                self._message(event)
            case PromptWithdrawnEvent():
                self._withdraw(event)
            case ConversationHeadEvent():
                self._head(event)
            case UsageEvent():
                self._usage(event)
            case TurnEvent():
                self._turn(event)
            case ToolCallIntentEvent():
                self._intent(event)
            case ToolCallResultEvent():
                self._result(event)
            case CheckpointEvent():
                self._checkpoint(event)
            case _:
                pass

    def apply_written(self, event: JournalEvent) -> None:
        """Fold an event just appended to the journal, as a replay would read it back: a deep
        copy, so the caller's values (message blocks) are never shared with the state."""
        self.apply(event.model_copy(deep=True))

    def _message(self, event: MessageEvent) -> None:
        message = StoredMessage(
            id=event.id,
            parent=event.parent,
            role=event.role,
            content=list(event.content),
            turn_id=event.turn_id,
            kind=event.kind,
            created_at=event.created_at,
            attachments=list(event.attachments or []),
        )
        self.messages[message.id] = message
        self.head = message.id
        if message.kind == "summary" and message.parent is None and self._compacting is not None:
            self.compacted[message.id] = self._compacting
        self._compacting = None
        if message.role == "user" and message.kind == "prompt":
            message.note_from_before = self.note_from
            self.note_from = None
            message.code_note_before = self.code_note
            self.code_note = None

    def _head(self, event: ConversationHeadEvent) -> None:
        self.head = event.head
        self._compacting = event.summarized if event.reason == "compaction" else None
        self.note_from = event.note_from
        if event.code_from is not None and event.checkpoint_id is not None:
            self.code_note = (event.code_from, event.checkpoint_id)
        if event.terminal is not None:
            self.terminal = event.terminal

    def _usage(self, event: UsageEvent) -> None:
        self.usage = self.usage.plus(event)
        if event.turn_id is not None:
            self.turn_usage[event.turn_id] = self.turn_usage.get(event.turn_id, UsageTotals()).plus(event)

    def _turn(self, event: TurnEvent) -> None:
        self.turn_heads[event.turn_id] = event.head_checkpoint
        if self.title is None:
            self.title = event.text[:200]
        if self.created_at is None:
            self.created_at = event.created_at

    def _intent(self, event: ToolCallIntentEvent) -> None:
        self.tool_calls[event.id] = ToolCallRecord(
            id=event.id,
            tool=event.tool,
            input=dict(event.input),
            turn_id=event.turn_id,
            message_id=event.message_id,
            started_at=event.ts,
        )

    def _result(self, event: ToolCallResultEvent) -> None:
        record = self.tool_calls.get(event.id)
        if record is None:  # a result without an intent: keep it visible anyway
            record = ToolCallRecord(event.id, event.tool, {}, event.turn_id, None, 0.0)
            self.tool_calls[record.id] = record
        record.status = event.status
        record.output = event.output
        record.is_error = event.is_error
        record.duration_ms = event.duration_ms
        record.changed_paths = list(event.changed_paths)

    def _checkpoint(self, event: CheckpointEvent) -> None:
        cp = event.checkpoint
        record = self.tool_calls.get(cp.tool_call_id or "")
        if record is not None and cp.kind == "tool":
            record.checkpoint_id = cp.id
        if cp.terminal is not None:
            self.terminal = cp.terminal

    def _withdraw(self, event: PromptWithdrawnEvent) -> None:
        message = self.messages[event.message_id]
        if self.head == message.id:
            self.head = message.parent
            self.note_from = message.note_from_before
            self.code_note = message.code_note_before
        self.withdrawn.append(
            WithdrawnPrompt(
                message_id=message.id,
                turn_id=event.turn_id,
                text=event.text or prompt_text(message),
                reason=event.reason or "error",
                after=message.parent,
            )
        )

    # ------------------------------------------------------------------ queries
    def terminal_session(self) -> TerminalSession:
        """The live terminal, continuing from the last recorded state (after a restart: what a
        secret variable held is not recorded, so it starts unset, and the next command says so)."""
        if self.shell is None:
            state, notes = revive(self.terminal, None, credentials.child_env())
            self.shell = TerminalSession(state, notes)
        return self.shell

    def unanswered_prompt(self) -> StoredMessage | None:
        """The head, when it is a prompt that got no reply (its turn ended without one)."""
        message = self.messages.get(self.head or "")
        if message is not None and message.role == "user" and message.kind == "prompt":
            return message
        return None

    def chain(self, head: str | None = None) -> list[StoredMessage]:
        """Messages root → ``head`` (default: the current head)."""
        out: list[StoredMessage] = []
        current = self.head if head is None else head
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            message = self.messages.get(current)
            if message is None:
                break
            out.append(message)
            current = message.parent
        out.reverse()
        return out

    def shown_chain(self) -> list[StoredMessage]:
        """The chain as people see it: before a compaction summary, the original messages it
        stands for (the model sees only the summary; nothing is hidden from the user)."""
        chain = self.chain()
        expanded: set[str] = set()
        while chain and chain[0].id in self.compacted and chain[0].id not in expanded:
            expanded.add(chain[0].id)
            chain = self.chain(self.compacted[chain[0].id]) + chain
        return chain

    def pending_intents(self) -> list[ToolCallRecord]:
        """Tool calls that were started but never got a result (a crash)."""
        return [r for r in self.tool_calls.values() if r.status is None]

    def view(self, *, running: bool = False, limit: int | None = None) -> ConversationView:
        """The chain as the client shows it (:meth:`shown_chain`); ``limit``: only its newest
        ``limit`` messages (the rest counted in ``messages_omitted``; withdrawn prompts are
        judged on the whole chain)."""
        whole = self.shown_chain()
        on_branch = {m.id for m in whole}
        omitted = 0 if limit is None else max(0, len(whole) - limit)
        chain = whole[omitted:]
        return ConversationView(
            session_id=self.session_id,
            head=self.head,
            messages=[
                MessageView(
                    id=m.id,
                    role=m.role,
                    turn_id=m.turn_id,
                    kind=m.kind,
                    content=m.content,
                    created_at=m.created_at,
                    attachments=m.attachments,
                )
                for m in chain
            ],
            usage=self.usage,
            cost_usd=self.usage.cost_usd,
            running=running,
            withdrawn=[
                w
                for w in self.withdrawn
                if w.message_id not in on_branch and (w.after is None or w.after in on_branch)
            ],
            tool_statuses={
                use["id"]: record.status
                for m in chain
                for use in tool_uses(m.content)
                if (record := self.tool_calls.get(use["id"])) is not None and record.status is not None
            },
            messages_omitted=omitted,
            turn_usage={
                m.turn_id: self.turn_usage[m.turn_id]
                for m in chain
                if m.turn_id is not None and m.turn_id in self.turn_usage
            },
            tool_checkpoints={
                use["id"]: record.checkpoint_id
                for m in chain
                for use in tool_uses(m.content)
                if (record := self.tool_calls.get(use["id"])) is not None and record.checkpoint_id is not None
            },
        )

    def result_for(self, tool_use_id: str, missing: str) -> dict[str, Any]:
        """The ``tool_result`` block for a call, from its journaled result or ``missing``."""
        record = self.tool_calls.get(tool_use_id)
        if record is None or record.status is None:
            text = INTERRUPTED if record is not None else missing
            return tool_result_block(tool_use_id, text, is_error=True)
        return tool_result_block(tool_use_id, record.output or "(no output)", is_error=record.is_error)

    def open_batch(self) -> StoredMessage | None:
        """The head, when it is an assistant message whose tool calls have no results yet."""
        message = self.messages.get(self.head or "")
        if message is not None and message.role == "assistant" and tool_uses(message.content):
            return message
        return None

    def api_messages(self) -> list[dict[str, Any]]:
        """The history as the Messages API accepts it."""
        return api_messages(self.chain(), self)


def prompt_text(message: StoredMessage) -> str:
    """The user's own words in a prompt message (its last text block; a restore note comes first)."""
    texts = [b.get("text") for b in message.content if b.get("type") == "text"]
    return str(texts[-1]) if texts else ""


def _without_unanswered_prompts(chain: list[StoredMessage]) -> list[StoredMessage]:
    """Drop every prompt that is directly followed by another prompt: it never got a reply, and
    sending it merged into the next request would silently run a stale request again."""
    return [
        m
        for i, m in enumerate(chain)
        if not (
            m.kind == "prompt"
            and i + 1 < len(chain)
            and chain[i + 1].role == "user"
            and chain[i + 1].kind == "prompt"
        )
    ]


def tool_uses(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in content if b.get("type") == "tool_use"]


def tool_result_block(tool_use_id: str, text: str, *, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": text or "(no output)",
    }
    if is_error:
        block["is_error"] = True
    return block


def results_for_batch(
    conv: Conversation, assistant: StoredMessage, *, upto: str | None, after_text: str
) -> list[dict[str, Any]]:
    """Result blocks for every call of ``assistant``: journaled results for calls up to ``upto``
    (all of them when ``None``; none when ``""``), ``after_text`` for the calls after it."""
    blocks: list[dict[str, Any]] = []
    passed = upto == ""
    for use in tool_uses(assistant.content):
        if passed:
            blocks.append(tool_result_block(use["id"], after_text, is_error=True))
            continue
        blocks.append(conv.result_for(use["id"], after_text))
        if upto is not None and use["id"] == upto:
            passed = True
    return blocks


def _merge(into: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    content = into["content"] + blocks
    # Tool results must come first in a user message.
    results = [b for b in content if b.get("type") == "tool_result"]
    others = [b for b in content if b.get("type") != "tool_result"]
    into["content"] = results + others


def api_messages(chain: list[StoredMessage], conv: Conversation) -> list[dict[str, Any]]:
    """Merge and repair a chain of stored messages into Messages API ``messages``."""
    out: list[dict[str, Any]] = []
    for message in _without_unanswered_prompts(chain):
        blocks = [dict(b) for b in message.content]
        if out and out[-1]["role"] == message.role:
            _merge(out[-1], blocks)
        else:
            out.append({"role": message.role, "content": blocks})
    for index, api_message in enumerate(out):  # appending while iterating is fine: new items are user
        uses = tool_uses(api_message["content"]) if api_message["role"] == "assistant" else []
        if not uses:
            continue
        following = out[index + 1] if index + 1 < len(out) else None
        answered = {
            b.get("tool_use_id")
            for b in (following["content"] if following else [])
            if b.get("type") == "tool_result"
        }
        missing = [conv.result_for(u["id"], NOT_RUN_STOPPED) for u in uses if u["id"] not in answered]
        if not missing:
            continue
        if following is None:
            out.append({"role": "user", "content": missing})
        else:
            _merge(following, missing)
    # Drop orphan tool results (their tool_use is not in the previous message).
    for index, user_message in enumerate(out):
        if user_message["role"] != "user":
            continue
        previous = out[index - 1] if index > 0 else None
        known = {u["id"] for u in tool_uses(previous["content"])} if previous else set()
        kept = [
            b
            for b in user_message["content"]
            if b.get("type") != "tool_result" or b.get("tool_use_id") in known
        ]
        user_message["content"] = kept or [{"type": "text", "text": "(continue)"}]
    return out
