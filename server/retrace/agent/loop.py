"""One agent turn: stream the model's reply, run its tool calls, checkpoint after each, repeat.

For every ``tool_use``: journal ``toolCallIntent`` → ``engine.record_external()`` (changes made by
someone else since the last checkpoint become an ``external`` checkpoint, never agent work) →
permission → execute → journal ``toolCallResult`` → ``engine.checkpoint(kind="tool", ...)``
carrying the editor state and the conversation cursor → ``CheckpointCreated``. A denied call
changes nothing and gets no checkpoint.

Model calls: the history is validated before every call (same rules as the API); rate limits,
overload and server errors are retried with exponential backoff (``error`` events with
``retrying=true``) and surfaced when they persist. A broken reply (malformed or cut-off stream)
ends the turn with a clean error and stores nothing of the partial reply, so no half tool call
ever runs. Engine calls are blocking: they run in a thread, serialised by :class:`EngineGate`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import Message

from retrace.agent.conversation import (
    CANCELLED,
    NOT_RUN_STOPPED,
    Conversation,
    new_id,
    now_iso,
    results_for_batch,
    tool_result_block,
    tool_uses,
)
from retrace.agent.events import (
    AgentError,
    AgentHost,
    CheckpointCreated,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallStatus,
    Usage,
)
from retrace.agent.permissions import PermissionPolicy
from retrace.agent.replay import ReplayBuffer
from retrace.agent.settings import AgentSettings, cost_usd
from retrace.agent.tools import TOOLS, ToolContext, ToolResult, execute, tool_schemas
from retrace.agent.validation import InvalidRequestError, validate_request
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import (
    JournalEvent,
    MessageEvent,
    ToolCallIntentEvent,
    ToolCallResultEvent,
    UsageEvent,
    event_json,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

SYSTEM_PROMPT = (
    "You are Retrace, a careful coding agent working in the user's workspace at {workspace}. "
    "Use the tools to read, search, edit files and run commands; paths are relative to the "
    "workspace root. Every tool call is checkpointed, so the user can take any step back. "
    "Keep edits minimal and explain briefly what you did."
)
NOT_RUN_CUT_OFF = (
    "not run: the model's reply was cut off at max_tokens, so its tool input may be incomplete; "
    "raise retrace.maxTokens or ask for smaller steps"
)
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
_RETRY_ERROR_TYPES = {"overloaded_error", "rate_limit_error", "api_error"}

ClientFactory = Callable[[AgentSettings], AsyncAnthropic]


def default_client_factory(settings: AgentSettings) -> AsyncAnthropic:
    """The real SDK client; retries are ours (they are reported as events), so the SDK's are off."""
    base_url = settings.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    api_key = os.environ.get("ANTHROPIC_API_KEY") or ("retrace-offline" if base_url else None)
    return AsyncAnthropic(base_url=base_url, api_key=api_key, max_retries=0)


class EngineGate:
    """Runs blocking engine calls in a thread, one at a time (the engine is not thread-safe).

    Pass the same ``lock`` to everything else that touches the engine (the JSON-RPC server)."""

    def __init__(self, engine: Engine, lock: threading.RLock | None = None) -> None:
        self.engine = engine
        self.lock = lock or threading.RLock()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def locked() -> T:
            with self.lock:
                return fn(*args, **kwargs)

        # Shielded: once started, an engine write completes even if the turn is cancelled.
        return await asyncio.shield(asyncio.to_thread(locked))


class CheckpointFailedError(Exception):
    """A tool ran but its checkpoint could not be recorded (store full, read-only…): the turn
    pauses so nothing more runs unrecorded; the user already got the engine's error."""


class ModelCallError(Exception):
    """A model call failed for good; ``message`` is the one line for the user."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class Runtime:
    """What a turn needs from the service that owns it."""

    gate: EngineGate
    host: AgentHost
    settings: AgentSettings
    policy: PermissionPolicy
    replay: ReplayBuffer
    client: AsyncAnthropic

    @property
    def engine(self) -> Engine:
        return self.gate.engine


async def journal(rt: Runtime, conv: Conversation, event: JournalEvent) -> None:
    """Append to the session journal and fold into the in-memory state, atomically."""

    def write() -> None:
        rt.engine.append_event(event, session_id=conv.session_id)
        conv.apply(event_json(event))

    await rt.gate.call(write)


async def append_message(
    rt: Runtime,
    conv: Conversation,
    role: str,
    content: list[dict[str, Any]],
    *,
    turn_id: str | None,
    kind: str,
) -> str:
    message_id = new_id("msg")
    await journal(
        rt,
        conv,
        MessageEvent(
            id=message_id,
            parent=conv.head,
            role=role,
            content=content,
            turn_id=turn_id,
            kind=kind,
            created_at=now_iso(),
        ),
    )
    return message_id


async def close_open_batch(rt: Runtime, conv: Conversation, turn_id: str | None, missing_text: str) -> None:
    """If the head is an assistant message with unanswered tool calls, answer them (journaled
    results where they exist, ``missing_text`` otherwise) so the history stays valid."""
    assistant = conv.open_batch()
    if assistant is None:
        return
    blocks = results_for_batch(conv, assistant, upto=None, after_text=missing_text)
    await append_message(rt, conv, "user", blocks, turn_id=turn_id, kind="toolResults")


# --------------------------------------------------------------------------- model calls


def _retryable(error: BaseException) -> bool:
    if isinstance(error, anthropic.APIStatusError):
        if error.status_code in _RETRY_STATUS:
            return True
        body = error.body
        if isinstance(body, dict):
            inner = body.get("error")
            if isinstance(inner, dict) and inner.get("type") in _RETRY_ERROR_TYPES:
                return True
        return False
    return isinstance(error, anthropic.APIConnectionError)


def _describe(error: BaseException) -> str:
    if isinstance(error, anthropic.APIStatusError):
        body = error.body
        inner = body.get("error") if isinstance(body, dict) else None
        message = inner.get("message") if isinstance(inner, dict) else None
        return f"{error.status_code} {message or type(error).__name__}"
    if isinstance(error, anthropic.APIConnectionError):
        return f"cannot reach the model API ({error})"
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0] if first else ''}"[:300]


async def with_retries(
    rt: Runtime, session_id: str, turn_id: str | None, attempt: Callable[[], Awaitable[T]]
) -> T:
    """Run ``attempt``, retrying transient API failures with exponential backoff."""
    retries = rt.settings.max_retries
    for number in range(retries + 1):
        try:
            return await attempt()
        except ModelCallError:
            raise
        except (anthropic.APIError, ValueError, OSError) as e:
            if not _retryable(e):
                raise ModelCallError(f"the model call failed: {_describe(e)}", str(e)) from e
            if number == retries:
                raise ModelCallError(
                    f"the model call failed after {retries} retries: {_describe(e)}", str(e)
                ) from e
            delay = rt.settings.retry_base_delay_s * (2**number)
            await rt.host.emit(
                AgentError(
                    session_id=session_id,
                    turn_id=turn_id,
                    message=f"{_describe(e)}; retrying in {delay:g}s ({number + 1}/{retries})",
                    detail=str(e),
                    retrying=True,
                )
            )
            await asyncio.sleep(delay)
        except Exception as e:  # httpx errors mid-stream and anything else the SDK lets through
            raise ModelCallError(f"the model's reply could not be read: {_describe(e)}", str(e)) from e
    raise AssertionError("unreachable")


def request_body(rt: Runtime, conv: Conversation) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": rt.settings.model,
        "max_tokens": rt.settings.max_tokens,
        "system": SYSTEM_PROMPT.format(workspace=rt.engine.workspace),
        "tools": tool_schemas(),
        "messages": conv.api_messages(),
    }
    validate_request(body)
    return body


async def stream_reply(rt: Runtime, conv: Conversation, turn_id: str, body: dict[str, Any]) -> Message:
    async def attempt() -> Message:
        async with rt.client.messages.stream(
            model=body["model"],
            max_tokens=body["max_tokens"],
            system=body["system"],
            tools=cast(Any, body["tools"]),
            messages=cast(Any, body["messages"]),
        ) as stream:
            async for event in stream:
                if event.type == "text" and event.text:
                    await rt.host.emit(
                        TextDelta(session_id=conv.session_id, turn_id=turn_id, text=event.text)
                    )
            message = await stream.get_final_message()
        if message.stop_reason is None:
            raise ModelCallError("the model's reply stream ended early (no stop reason); nothing was kept")
        return message

    return await with_retries(rt, conv.session_id, turn_id, attempt)


async def record_usage(
    rt: Runtime, conv: Conversation, turn_id: str | None, input_tokens: int, output_tokens: int
) -> None:
    cost = cost_usd(rt.settings.model, input_tokens, output_tokens)
    await journal(
        rt,
        conv,
        UsageEvent(
            turn_id=turn_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            model=rt.settings.model,
        ),
    )
    await rt.host.emit(
        Usage(
            session_id=conv.session_id,
            turn_id=turn_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_input_tokens=conv.usage.input_tokens,
            total_output_tokens=conv.usage.output_tokens,
            cost_usd=conv.usage.cost_usd,
        )
    )


def content_blocks(message: Message) -> list[dict[str, Any]]:
    """The reply as plain JSON blocks (empty text dropped: the API rejects it on the way back)."""
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            tool_input = block.input if isinstance(block.input, dict) else {}
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input})
    return blocks


# --------------------------------------------------------------------------- tool calls


async def emit_checkpoint(rt: Runtime, session_id: str, turn_id: str | None, cp: Checkpoint) -> None:
    await rt.host.emit(CheckpointCreated(session_id=session_id, turn_id=turn_id, checkpoint=cp))


async def record_external(rt: Runtime, session_id: str, turn_id: str | None, cursor: str | None) -> None:
    """Changes nobody announced become an ``external`` checkpoint before the agent acts again."""
    try:
        cp = await rt.gate.call(
            rt.engine.record_external,
            session_id=session_id,
            turn_id=turn_id,
            editor_state=rt.host.editor_state(),
            conversation=cursor,
        )
    except RetraceError as e:
        await rt.host.emit(AgentError(session_id=session_id, turn_id=turn_id, message=str(e)))
        return
    if cp is not None:
        await emit_checkpoint(rt, session_id, turn_id, cp)


async def run_tool(
    rt: Runtime, conv: Conversation, use: dict[str, Any], *, turn_id: str, assistant_id: str, cursor: str
) -> dict[str, Any]:
    """Run one tool call end to end; returns its ``tool_result`` block. ``cursor``: the
    conversation position before this call (stamped on an external checkpoint)."""
    sid = conv.session_id
    call_id, tool, tool_input = use["id"], use["name"], dict(use.get("input") or {})
    await rt.host.emit(
        ToolCallStarted(session_id=sid, turn_id=turn_id, tool_call_id=call_id, tool=tool, input=tool_input)
    )
    await journal(
        rt,
        conv,
        ToolCallIntentEvent(
            id=call_id,
            tool=tool,
            input=tool_input,
            turn_id=turn_id,
            message_id=assistant_id,
            created_at=now_iso(),
        ),
    )
    rt.replay.add(sid, conv.tool_calls[call_id])
    await record_external(rt, sid, turn_id, cursor)

    async def finish(
        status: ToolCallStatus, output: str, is_error: bool, paths: list[str] | None, ms: float
    ) -> None:
        await journal(
            rt,
            conv,
            ToolCallResultEvent(
                id=call_id,
                tool=tool,
                status=status,
                output=output,
                is_error=is_error,
                duration_ms=ms,
                changed_paths=paths or [],
                turn_id=turn_id,
            ),
        )

    async def finished_event(status: ToolCallStatus, output: str, ms: float, paths: list[str]) -> None:
        await rt.host.emit(
            ToolCallFinished(
                session_id=sid,
                turn_id=turn_id,
                tool_call_id=call_id,
                tool=tool,
                status=status,
                output=output,
                duration_ms=ms,
                changed_paths=paths,
            )
        )

    spec = TOOLS.get(tool)
    if spec is not None and rt.policy.setting_for(tool) == "ask" and not rt.policy.remembered(sid, tool):
        await rt.host.emit(
            PermissionRequested(
                session_id=sid, turn_id=turn_id, request_id=call_id, tool=tool, input=tool_input
            )
        )
    try:
        decision = await rt.policy.decide(rt.host, sid, tool, tool_input, request_id=call_id)
    except asyncio.CancelledError:  # cancelled while the user was being asked: nothing ran
        await finish("cancelled", CANCELLED, True, [], 0.0)
        await finished_event("cancelled", CANCELLED, 0.0, [])
        raise
    if decision == "deny":
        output = f"permission denied: the user did not allow this {tool} call; nothing was changed"
        await finish("denied", output, True, [], 0.0)
        await finished_event("denied", output, 0.0, [])
        return tool_result_block(call_id, output, is_error=True)

    ctx = ToolContext(
        workspace=rt.engine.workspace,
        engine_config=rt.engine.config,
        dirty_paths=frozenset(rt.host.dirty_paths()),
        command_timeout_s=rt.settings.command_timeout_s,
        output_cap_bytes=rt.settings.output_cap_bytes,
    )

    async def record(result: ToolResult) -> Checkpoint | None:
        """The checkpoint that ends this call, whatever way it ended."""
        return await checkpoint_tool(
            rt,
            conv,
            turn_id=turn_id,
            assistant_id=assistant_id,
            call_id=call_id,
            tool=tool,
            tool_input=tool_input,
            result=result,
        )

    started = time.perf_counter()
    try:
        result = await execute(tool, tool_input, ctx)
    except asyncio.CancelledError:
        ms = (time.perf_counter() - started) * 1000
        await finish("cancelled", CANCELLED, True, None, ms)
        await record(ToolResult(CANCELLED, True, None))
        await finished_event("cancelled", CANCELLED, ms, [])
        raise
    ms = (time.perf_counter() - started) * 1000
    status: ToolCallStatus = "error" if result.is_error else "ok"
    await finish(status, result.output, result.is_error, result.changed_paths, ms)
    cp = await record(result) if spec is not None else None
    paths = result.changed_paths
    if paths is None:  # a shell command: what changed is what the engine detected
        paths = [f.path for f in cp.files] if cp is not None else []
    await finished_event(status, result.output, ms, paths)
    if spec is not None and cp is None:
        raise CheckpointFailedError(
            f"Retrace could not record a checkpoint after {tool} call {call_id}; "
            "the agent paused so that nothing runs unrecorded"
        )
    return tool_result_block(call_id, result.output, is_error=result.is_error)


async def checkpoint_tool(
    rt: Runtime,
    conv: Conversation,
    *,
    turn_id: str,
    assistant_id: str,
    call_id: str,
    tool: str,
    tool_input: dict[str, Any],
    result: ToolResult,
) -> Checkpoint | None:
    spec = TOOLS.get(tool)
    try:
        cp = await rt.gate.call(
            rt.engine.checkpoint,
            spec.summary(tool_input) if spec else tool,
            result.changed_paths,
            kind="tool",
            session_id=conv.session_id,
            turn_id=turn_id,
            tool=tool,
            tool_call_id=call_id,
            editor_state=rt.host.editor_state(),
            conversation=f"{assistant_id}#{call_id}",
        )
    except RetraceError as e:
        await rt.host.emit(
            AgentError(
                session_id=conv.session_id, turn_id=turn_id, message=f"checkpoint after {tool} failed: {e}"
            )
        )
        return None
    record = conv.tool_calls.get(call_id)
    if record is not None:
        record.checkpoint_id = cp.id
    await emit_checkpoint(rt, conv.session_id, turn_id, cp)
    return cp


# --------------------------------------------------------------------------- the turn

StopReason = str


def workspace_missing(rt: Runtime) -> str | None:
    """Why no tool may run because the workspace folder is gone (moved or deleted), else ``None``."""
    if rt.engine.workspace.is_dir():
        return None
    return (
        f"the workspace folder {rt.engine.workspace} no longer exists (moved or deleted?); "
        "the agent paused: nothing was run or recorded"
    )


async def run_turn(rt: Runtime, conv: Conversation, turn_id: str, prompt_blocks: list[dict[str, Any]]) -> str:
    """Run one turn to its end; returns the TurnFinished stop reason. Cancellation propagates."""
    sid = conv.session_id
    await append_message(rt, conv, "user", prompt_blocks, turn_id=turn_id, kind="prompt")
    for _ in range(rt.settings.max_iterations):
        try:
            body = request_body(rt, conv)
        except InvalidRequestError as e:
            await rt.host.emit(
                AgentError(
                    session_id=sid,
                    turn_id=turn_id,
                    message=f"internal error: the conversation is not valid for the model API: {e}",
                )
            )
            return "error"
        try:
            reply = await stream_reply(rt, conv, turn_id, body)
        except ModelCallError as e:
            await rt.host.emit(AgentError(session_id=sid, turn_id=turn_id, message=str(e), detail=e.detail))
            return "error"
        await record_usage(rt, conv, turn_id, reply.usage.input_tokens, reply.usage.output_tokens)
        blocks = content_blocks(reply)
        if not blocks:
            return "refusal" if reply.stop_reason == "refusal" else "end_turn"
        if reply.stop_reason == "refusal":
            # A refused reply is shown but never acted on: its tool calls (if any) are dropped.
            blocks = [b for b in blocks if b["type"] == "text"]
            if blocks:
                await append_message(rt, conv, "assistant", blocks, turn_id=turn_id, kind="assistant")
            return "refusal"
        assistant_id = await append_message(rt, conv, "assistant", blocks, turn_id=turn_id, kind="assistant")
        uses = tool_uses(blocks)
        if not uses:
            return "max_tokens" if reply.stop_reason == "max_tokens" else "end_turn"
        if reply.stop_reason == "max_tokens":
            # The reply was cut off: its last tool input may be incomplete (a write_file with half
            # its content). Nothing of it runs; every call is answered so the history stays valid.
            await close_open_batch(rt, conv, turn_id, NOT_RUN_CUT_OFF)
            await rt.host.emit(AgentError(session_id=sid, turn_id=turn_id, message=NOT_RUN_CUT_OFF))
            return "max_tokens"
        results = []
        cursor = f"{assistant_id}#"
        for use in uses:
            missing = workspace_missing(rt)
            if missing is not None:
                # Pause, never pretend: a capture now would record every file as deleted and a
                # tool would recreate an empty workspace folder.
                await close_open_batch(rt, conv, turn_id, f"not run: {missing}")
                await rt.host.emit(AgentError(session_id=sid, turn_id=turn_id, message=missing))
                return "error"
            try:
                results.append(
                    await run_tool(rt, conv, use, turn_id=turn_id, assistant_id=assistant_id, cursor=cursor)
                )
            except CheckpointFailedError as e:
                # Pause, never pretend: the remaining calls are answered (the model learns why).
                await close_open_batch(rt, conv, turn_id, f"not run: {e}")
                return "error"
            cursor = f"{assistant_id}#{use['id']}"
        await append_message(rt, conv, "user", results, turn_id=turn_id, kind="toolResults")
    return "max_iterations"


async def stop_cleanly(rt: Runtime, conv: Conversation, turn_id: str | None) -> None:
    """After a cancel: answer every unanswered call so the history stays valid."""
    await close_open_batch(rt, conv, turn_id, f"{NOT_RUN_STOPPED} ({CANCELLED})")
