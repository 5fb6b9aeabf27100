"""``AgentService``: the agent's public API for the JSON-RPC server, the CLI and tests.

It owns the sessions of one workspace (their conversations live in the engine's journals),
starts each turn as an asyncio task, and implements conversation restore, summaries, crash
resume and the replay buffer. Every engine call goes through one :class:`EngineGate` (pass
``gate`` to share it with the other engine users of the process).

Conversations are folded lazily: start-up folds only the sessions whose journal changed since
they were last found settled (:mod:`retrace.agent.session_index`), the others on first use.

Crash resume (:meth:`AgentService.load`): a ``toolCallIntent`` without a ``toolCallResult`` is
marked ``interrupted`` (journaled), the workspace is re-captured (``record_external``), and the
open tool batch is answered with "interrupted: side effects unknown; the workspace was
re-captured" so the model learns it on the next turn. Completed calls are never run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from retrace import credentials
from retrace.agent.background import BackgroundTasks
from retrace.agent.conversation import (
    NOT_RUN_RESTORED,
    Conversation,
    ConversationView,
    StoredMessage,
    new_id,
    now_iso,
    parse_cursor,
    results_for_batch,
)
from retrace.agent.editor_context import Attachment, EditorContext, format_attachments, recorded_attachment
from retrace.agent.loop import ModelCallError, run_turn, stop_cleanly, write_summary
from retrace.agent.mcp.toolset import McpTools
from retrace.agent.mentions import read_mentions
from retrace.agent.model.interface import ModelClient
from retrace.agent.notifications import (
    AgentError,
    AgentHost,
    BackgroundTaskView,
    ConversationChanged,
    TurnFinished,
    TurnStarted,
)
from retrace.agent.permissions import PermissionPolicy
from retrace.agent.recent_calls import ReplayBuffer, ToolCallView
from retrace.agent.restore_notes import journal_code_restore, restore_notes
from retrace.agent.resume import finish_interrupted, withdraw_unanswered
from retrace.agent.rewind import rewind_side_state
from retrace.agent.runtime import (
    ClientFactory,
    Runtime,
    append_message,
    default_client_factory,
    journal,
)
from retrace.agent.session_index import FILE_NAME as SESSION_INDEX
from retrace.agent.session_index import SessionIndex, SessionRecord
from retrace.agent.settings import AgentSettings
from retrace.agent.subagents.service import TaskService
from retrace.agent.subagents.topology import cut_off, fold
from retrace.agent.summary_cut import SummaryDirection, api_groups, assemble_summary, split_for_summary
from retrace.agent.terminal import revive
from retrace.agent.tool_call import emit_checkpoint, record_background
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.gate import EngineGate
from retrace.engine.models import Checkpoint, RestoreOutcome, TerminalState
from retrace.engine.store.cursor import end_mark
from retrace.engine.store.events import (
    ConversationHeadEvent,
    JournalEvent,
    MessageEvent,
    ToolCallIntentEvent,
    TurnEvent,
)
from retrace.engine.store.layout import StoreLayout
from retrace.redact import redact

if TYPE_CHECKING:
    from retrace.agent.folders import FolderAccess

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True)
class SessionRestored:
    """What a conversation restore did: the conversation, and the terminal state it moved to."""

    view: ConversationView
    terminal: TerminalState
    terminal_notes: list[str]
    """What could not be brought back as it was (secret variables: kept or left unset)."""
    before: tuple[str | None, TerminalState] | None = None
    """The head and terminal state it moved away from (what an undo moves back to)."""
    revoked: list[str] = field(default_factory=list)
    """Tools whose ``allowAlways`` answer came after the target: asked again from now on."""
    stopped: list[BackgroundTaskView] = field(default_factory=list)
    """Background commands started after the target, stopped by the restore."""


@dataclass(frozen=True)
class MessageAt:
    head: str | None
    """The conversation head to restore to (``None``: before the first message)."""


class AgentService:
    """The agent for one workspace (one :class:`Engine`)."""

    def __init__(
        self,
        engine: Engine,
        host: AgentHost,
        settings: AgentSettings | None = None,
        client_factory: ClientFactory | None = None,
        *,
        gate: EngineGate | None = None,
    ) -> None:
        self.engine = engine
        self.host = host
        self.settings = settings or AgentSettings()
        self.gate = gate or EngineGate(engine)
        self.policy = PermissionPolicy(self.settings.permissions)
        self.replay = ReplayBuffer()
        self._client_factory = client_factory or default_client_factory
        self._client: ModelClient | None = None
        self._convs: dict[str, Conversation] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._index: SessionIndex | None = None
        self.tasks = TaskService(
            self._runtime, self._conversation, self._require_idle, self.running, run_turn
        )
        """The sessions' subagents (list, timeline, apply, discard)."""
        layout = StoreLayout(engine.store_dir)
        self.background = BackgroundTasks(host, None if engine.readonly else layout.background_record)
        self.mcp = McpTools(engine.workspace, self.settings.mcp)
        """The MCP servers (started at the first turn; :meth:`McpTools.close` at shutdown)."""
        self.folder_access: FolderAccess | None = None
        """The other folders of a multi-root workspace, set by the server (:mod:`retrace.agent.folders`)."""

    # ------------------------------------------------------------------ plumbing
    def _runtime(self) -> Runtime:
        settings = self.settings
        return Runtime(
            self.gate,
            self.host,
            settings,
            self.policy,
            self.replay,
            lambda: self._model_client(settings),
            background=self.background,
            folders=self.folder_access,
        )

    def _model_client(self, settings: AgentSettings) -> ModelClient:
        """The client for ``settings``, made on first need (making one imports the SDK: seconds);
        kept while they are the service's settings."""
        if settings is not self.settings:  # replaced since that runtime was made
            return self._client_factory(settings)
        if self._client is None:
            self._client = self._client_factory(settings)
        return self._client

    async def _conversation(
        self, session_id: str, *, create: bool = False, rebuild_replay: bool = True
    ) -> Conversation:
        """The session's conversation, folded from its journal on first use (``rebuild_replay``:
        then put its tool calls in the replay buffer; a caller folding many does it once)."""
        conv = self._convs.get(session_id)
        if conv is not None:
            return conv
        known = await self.gate.call(self.engine.sessions)
        if session_id not in known and not create:
            raise RetraceError(f"unknown session {session_id[:100]!r}")
        events: list[JournalEvent] = []
        if session_id in known:
            events = await self.gate.call(lambda: list(self.engine.events(session_id)))
        conv = self._convs.get(session_id)  # folded meanwhile by another caller
        if conv is None:
            conv = self._convs[session_id] = Conversation.from_events(session_id, events)
            if rebuild_replay:
                self._rebuild_replay()
        return conv

    def _rebuild_replay(self) -> None:
        self.replay.rebuild(
            (sid, record) for sid, conv in self._convs.items() for record in conv.tool_calls.values()
        )

    def _require_idle(self, session_id: str) -> None:
        if self.running(session_id):
            raise RetraceError(f"session {session_id} is running a turn; cancel it first")

    # ------------------------------------------------------------------ lifecycle
    async def load(self) -> list[str]:
        """Resume after a crash; returns the session ids that had interrupted tool calls.

        Only sessions whose journal changed since the agent last found them settled are folded
        here (:mod:`.session_index`): a session a crash interrupted always did change. Every
        other conversation is folded when first needed (prompt, view, restore, summary,
        :meth:`load_all`)."""
        rt = self._runtime()
        layout = StoreLayout(self.engine.store_dir)
        await asyncio.to_thread(self.background.end_leftovers)
        sids = await self.gate.call(self.engine.sessions)

        def read_index() -> tuple[SessionIndex, set[str]]:
            index = SessionIndex.load(layout.cache / SESSION_INDEX)
            return index, {sid for sid in sids if index.settled(sid, layout.journal(sid)) is not None}

        index, settled = await self.gate.call(read_index)
        interrupted: list[str] = []
        for sid in sids:
            if sid in settled:
                continue
            if await self._resume(rt, sid):
                interrupted.append(sid)
            conv = self._convs.get(sid)
            mark = await self.gate.call(lambda sid=sid: end_mark(layout.journal(sid)))
            if mark is not None:
                title, created = (conv.title, conv.created_at) if conv is not None else (None, None)
                index.mark(sid, SessionRecord(mark, conv is not None, title, created))
        index.keep_only(sids)
        self._index = index
        if not self.engine.readonly:
            await self.gate.call(index.save)
        self._rebuild_replay()
        return interrupted

    async def _resume(self, rt: Runtime, sid: str) -> bool:
        """Fold one session (if it holds a conversation) and finish what a crash left open;
        whether it had interrupted tool calls."""
        events = await self.gate.call(lambda: list(self.engine.events(sid)))
        if not any(isinstance(e, (MessageEvent, TurnEvent, ToolCallIntentEvent)) for e in events):
            return False
        conv = Conversation.from_events(sid, events)
        self._convs[sid] = conv
        interrupted = await finish_interrupted(rt, conv)
        for task in cut_off(fold(events)):  # children the crash cut off: their timelines stay
            await journal(rt, conv, task.model_copy(update={"status": "interrupted"}))
        return interrupted

    async def load_all(self) -> None:
        """Fold every session not folded yet (what a search over all tool calls needs)."""
        folded = False
        for sid in await self.gate.call(self.engine.sessions):
            if sid not in self._convs and self._holds_conversation(sid):
                await self._conversation(sid, rebuild_replay=False)
                folded = True
        if folded:
            self._rebuild_replay()

    def _holds_conversation(self, sid: str) -> bool:
        record = self._index.records.get(sid) if self._index is not None else None
        return record is None or record.agent

    def update_settings(self, settings: AgentSettings | None = None, **changes: Any) -> AgentSettings:
        """Replace the settings (or some fields: ``update_settings(model="...")``); running turns
        keep the settings they started with."""
        base = settings or self.settings
        self.settings = AgentSettings.model_validate({**base.model_dump(), **changes})
        self.policy.settings = self.settings.permissions
        self.mcp.configure(self.settings.mcp)
        self._client = None
        return self.settings

    # ------------------------------------------------------------------ turns
    async def prompt(
        self,
        text: str,
        session_id: str | None = None,
        *,
        context: EditorContext | None = None,
        mentions: list[str] | None = None,
        retry_of: str | None = None,
    ) -> tuple[str, str]:
        """Start a turn (as a task) and return (session id, turn id) at once. ``context`` and
        ``mentions`` (files named ``@path``) are read now and attached to the prompt; ``retry_of``
        (a failed prompt's message or turn id) attaches what that prompt carried instead."""
        if not text.strip():
            raise RetraceError("the prompt is empty")
        sid = session_id or new_id("ses")
        self._require_idle(sid)
        # Only the server names new sessions: a client-chosen id would become a journal path
        # (``../../x`` would write outside the store), so an unknown id is refused, not created.
        conv = await self._conversation(sid, create=not session_id)
        turn_id = new_id("turn")
        failed = _prompt_message(conv, retry_of) if retry_of else None
        attachment = (
            recorded_attachment(failed.content, failed.attachments)
            if failed is not None
            else await self._attachment(context, mentions or [])
        )
        turn = self._turn(conv, turn_id, text, attachment)
        task = asyncio.create_task(turn, name=f"retrace-turn-{turn_id}")
        self._tasks[sid] = task
        return sid, turn_id

    async def _attachment(self, context: EditorContext | None, mentions: list[str]) -> Attachment:
        if context is None and not mentions:
            return Attachment(block="")
        read = await asyncio.to_thread(read_mentions, self.engine.workspace, self.engine.config, mentions)
        return format_attachments(context, read)

    async def _prompt_blocks(self, conv: Conversation, text: str, attached: str = "") -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        news = self.background.news(conv.session_id)
        if news is not None:  # background commands' output: journaled with known secrets redacted
            blocks.append({"type": "text", "text": redact(news)})
        blocks.extend(await restore_notes(self.gate, conv))
        if attached:  # before the user's words, which stay the last text block (``prompt_text``)
            blocks.append({"type": "text", "text": attached})
        blocks.append({"type": "text", "text": text})
        return blocks

    async def _turn(self, conv: Conversation, turn_id: str, text: str, attachment: Attachment) -> None:
        rt = self._runtime()
        sid = conv.session_id
        stop: str = "error"
        try:
            await self.host.emit(
                TurnStarted(session_id=sid, turn_id=turn_id, text=text, attachments=attachment.summary)
            )
            head = await self.gate.call(lambda: self.engine.history.head_id)  # "before this prompt"
            await journal(
                rt, conv, TurnEvent(turn_id=turn_id, text=text, created_at=now_iso(), head_checkpoint=head)
            )
            rt.extra_tools = await self.mcp.specs(
                lambda m: self.host.emit(AgentError(session_id=sid, turn_id=turn_id, message=m))
            )
            await record_background(rt, conv, turn_id, conv.head)  # a turn boundary
            blocks = await self._prompt_blocks(conv, text, attachment.block)
            stop = await run_turn(rt, conv, turn_id, blocks, attachment.summary)
        except asyncio.CancelledError:
            stop = "cancelled"
            await stop_cleanly(rt, conv, turn_id)
        except Exception as e:  # a bug must end the turn visibly, not kill the task silently
            log.exception("turn %s failed", turn_id)
            stop = "error"
            with contextlib.suppress(Exception):
                await stop_cleanly(rt, conv, turn_id)
            await self.host.emit(
                AgentError(session_id=sid, turn_id=turn_id, message=f"the turn failed: {e}", detail=repr(e))
            )
        finally:
            with contextlib.suppress(Exception):
                if await withdraw_unanswered(rt, conv, stop, turn_id=turn_id, text=text):
                    self.background.redeliver(sid)
            with contextlib.suppress(Exception):
                await record_background(rt, conv, turn_id, conv.head)  # a turn boundary
            self._tasks.pop(sid, None)
        await self.host.emit(TurnFinished(session_id=sid, turn_id=turn_id, stop_reason=stop))

    def running(self, session_id: str) -> bool:
        task = self._tasks.get(session_id)
        return task is not None and not task.done()

    def running_sessions(self) -> frozenset[str]:
        """Every session running a turn now (a new one too, before its first journal line)."""
        return frozenset(sid for sid, task in list(self._tasks.items()) if not task.done())

    async def wait_idle(self, session_id: str) -> None:
        task = self._tasks.get(session_id)
        if task is not None:
            await asyncio.wait({task})  # never raises the turn's outcome; our own cancel propagates

    async def cancel(self, session_id: str) -> bool:
        """Cancel the running turn (a running command's process group is killed); ``False`` if idle."""
        task = self._tasks.get(session_id)
        if task is None or task.done():
            return False
        task.cancel()
        await self.wait_idle(session_id)
        return True

    # ------------------------------------------------------------------ views
    async def conversation(self, session_id: str, limit: int | None = None) -> ConversationView:
        """The session's conversation for the client (``limit``: its newest messages only)."""
        conv = await self._conversation(session_id)
        return conv.view(running=self.running(session_id), limit=limit)

    def search_tool_calls(
        self, tool: str | None = None, input_contains: str | None = None, session_id: str | None = None
    ) -> list[ToolCallView]:
        """The replay buffer's calls of the sessions folded so far (a running session always is;
        :meth:`search_all_tool_calls` covers every session)."""
        return self.replay.search(tool=tool, input_contains=input_contains, session_id=session_id)

    async def search_all_tool_calls(
        self, tool: str | None = None, input_contains: str | None = None
    ) -> list[ToolCallView]:
        """:meth:`search_tool_calls` over every session (folds the ones not folded yet)."""
        await self.load_all()
        return self.search_tool_calls(tool=tool, input_contains=input_contains)

    # ------------------------------------------------------------------ restore
    async def _recorded_at(
        self, checkpoint: Checkpoint, session_id: str, pick: Callable[[Checkpoint], _T | None]
    ) -> _T | None:
        """What ``pick`` reads of ``checkpoint`` — or of its nearest ancestor that belongs to
        ``session_id`` and has it (``None``: from before the session began)."""
        current: Checkpoint | None = checkpoint
        while current is not None:
            value = pick(current)
            if value is not None and current.session_id == session_id:
                return value
            if current.parent is None:
                return None
            current = await self.gate.call(self.engine.get, current.parent)
        return None

    async def _cursor_of(self, checkpoint: Checkpoint, session_id: str) -> str | None:
        """The conversation cursor of ``session_id`` at ``checkpoint``."""
        return await self._recorded_at(checkpoint, session_id, lambda c: c.conversation)

    async def restore_conversation(self, session_id: str, checkpoint_id: str) -> ConversationView:
        """:meth:`restore_session`'s conversation view."""
        return (await self.restore_session(session_id, checkpoint_id)).view

    async def folded(self, session_id: str, *, create: bool = False) -> Conversation:
        """The session's conversation as folded from its journal (read it, never change it)."""
        return await self._conversation(session_id, create=create)

    async def restore_session(
        self, session_id: str, checkpoint_id: str, at: MessageAt | None = None
    ) -> SessionRestored:
        """Move the session's conversation head, and its terminal state, to where they were at the
        checkpoint (non-destructive). A cursor in the middle of a tool batch answers the later
        calls with "not run: restored"; a checkpoint from before the session's first message gives
        an empty conversation. A secret variable's value was never recorded: the session keeps
        its current value when it has one, else it is left unset (said in ``terminal_notes``,
        the log, and the next command's result). ``at``: this head instead of the checkpoint's
        cursor (a prompt's restore point, :mod:`retrace.app.prompt_points`)."""
        self._require_idle(session_id)
        checkpoint = await self.gate.call(self.engine.get, checkpoint_id)
        conv = await self._conversation(session_id, create=True)
        before = (conv.head, conv.terminal_session().state.record())
        rt = self._runtime()
        cursor = await self._cursor_of(checkpoint, session_id) if at is None else None
        head: str | None = None if at is None else at.head
        if head is not None and head not in conv.messages:
            raise RetraceError(f"message {head[:100]!r} is not in session {session_id}")
        if cursor is not None:
            message_id, call_id = parse_cursor(cursor)
            message = conv.messages.get(message_id)
            if message is None:
                raise RetraceError(
                    f"checkpoint {checkpoint.id} belongs to another conversation (session "
                    f"{checkpoint.session_id}), not to session {session_id}"
                )
            head = message_id
            if call_id is not None and message.role == "assistant":
                blocks = results_for_batch(conv, message, upto=call_id, after_text=NOT_RUN_RESTORED)
                await journal(rt, conv, _head_event(message_id, checkpoint.id, None))
                head = await append_message(
                    rt, conv, "user", blocks, turn_id=message.turn_id, kind="restoreResults"
                )
        shell = conv.terminal_session()
        target = await self._recorded_at(checkpoint, session_id, lambda c: c.terminal) or TerminalState()
        state, notes = revive(target, shell.state, credentials.child_env())
        event = _head_event(head, checkpoint.id, checkpoint.id)
        event.terminal = state.record()
        await journal(rt, conv, event)
        shell.state = state
        shell.notes.extend(notes)
        for note in notes:
            log.info("session %s restored to %s: terminal %s", session_id, checkpoint.id, note)
        revoked, stopped = await rewind_side_state(rt, conv, self.background, checkpoint.id)
        await self.host.emit(ConversationChanged(session_id=session_id, head=head))
        return SessionRestored(conv.view(running=False), event.terminal, notes, before, revoked, stopped)

    async def move_head(
        self, session_id: str, head: str | None, terminal: TerminalState, fork: str | None = None
    ) -> SessionRestored:
        """Put head and terminal back where a restore found them; ``fork``: a redo's target."""
        self._require_idle(session_id)
        conv = await self._conversation(session_id)
        if head is not None and head not in conv.messages:
            raise RetraceError(f"message {head[:100]!r} is not in session {session_id}")
        shell = conv.terminal_session()
        before = (conv.head, shell.state.record())
        state, notes = revive(terminal, shell.state, credentials.child_env())
        event = ConversationHeadEvent(head=head, reason="undo", checkpoint_id=fork, terminal=state.record())
        await journal(self._runtime(), conv, event)
        shell.state = state
        await self.host.emit(ConversationChanged(session_id=session_id, head=head))
        return SessionRestored(conv.view(running=False), state.record(), notes, before)

    async def note_code_restore(self, session_id: str, outcome: RestoreOutcome) -> None:
        """After a code-only restore: the session's next prompt tells the model which files it
        reverted (:mod:`retrace.agent.restore_notes`; nothing when it made no checkpoint)."""
        await journal_code_restore(self._runtime(), await self._conversation(session_id), outcome)

    # ------------------------------------------------------------------ summaries
    async def summarize(self, checkpoint_id: str, direction: SummaryDirection) -> Checkpoint:
        """Compress the conversation before (``upTo``) or after (``from``) a checkpoint into a
        model-written summary: a new message chain (the originals stay in the journal) and a
        ``summary`` checkpoint whose cursor is its head."""
        if direction not in ("from", "upTo"):
            raise RetraceError(f"unknown summary direction {direction!r} (from | upTo)")
        checkpoint = await self.gate.call(self.engine.get, checkpoint_id)
        sid = checkpoint.session_id
        self._require_idle(sid)
        conv = await self._conversation(sid)
        cursor = await self._cursor_of(checkpoint, sid)
        if cursor is None:
            raise RetraceError(f"checkpoint {checkpoint.id} has no conversation to summarize")
        message_id, _ = parse_cursor(cursor)
        chain = conv.chain()
        position = next((i for i, m in enumerate(chain) if m.id == message_id), None)
        if position is None:
            raise RetraceError(
                f"checkpoint {checkpoint.id} is not on the current conversation branch; "
                "restore the conversation to it first"
            )
        groups = api_groups(chain, conv)
        index = next(i for i, (_, ids) in enumerate(groups) if message_id in ids)
        keep_before, summarized, keep_after = split_for_summary(groups, index, direction)
        if not summarized:
            where = "after" if direction == "from" else "up to"
            raise RetraceError(f"nothing to summarize {where} checkpoint {checkpoint.id}")
        rt = self._runtime()
        summary = await self._write_summary(rt, conv, [m for m, _ in summarized])
        span = "after" if direction == "from" else "up to"
        note = f"[Summary of the conversation {span} checkpoint {checkpoint.id}]\n{summary}"
        new_chain = assemble_summary(keep_before, note, keep_after)
        await journal(rt, conv, _head_event(None, checkpoint.id, None, reason="summary"))
        head: str | None = None
        for role, content in new_chain:
            kind = "summary" if any(b.get("text") == note for b in content) else "message"
            head = await append_message(rt, conv, role, content, turn_id=None, kind=kind)
        cp = await self.gate.call(
            self.engine.checkpoint,
            f"summary {direction} {checkpoint.id}",
            [],
            kind="summary",
            session_id=sid,
            editor_state=self.host.editor_state(),
            conversation=head,
            terminal=conv.terminal_session().state.record(),
            meta={"summaryOf": checkpoint.id, "direction": direction},
        )
        await emit_checkpoint(rt, sid, None, cp)
        await self.host.emit(ConversationChanged(session_id=sid, head=head))
        return cp

    async def _write_summary(self, rt: Runtime, conv: Conversation, messages: list[dict[str, Any]]) -> str:
        try:
            return await write_summary(rt, conv, None, messages)
        except ModelCallError as e:
            raise RetraceError(f"summary failed: {e}") from e


# --------------------------------------------------------------------------- helpers


def _head_event(
    head: str | None, checkpoint_id: str, note_from: str | None, *, reason: str = "restore"
) -> ConversationHeadEvent:
    return ConversationHeadEvent(head=head, reason=reason, checkpoint_id=checkpoint_id, note_from=note_from)


def _prompt_message(conv: Conversation, ref: str) -> StoredMessage | None:
    """The prompt message with id ``ref``, or the prompt of turn ``ref``."""
    message = conv.messages.get(ref)
    if message is not None and message.kind == "prompt":
        return message
    return next((m for m in conv.messages.values() if m.kind == "prompt" and m.turn_id == ref), None)
