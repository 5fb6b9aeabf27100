"""One agent turn: stream the model's reply, run its tool calls, checkpoint after each, repeat.

Each ``tool_use`` runs end to end in :mod:`retrace.agent.tool_call` (intent → external changes
→ permission → execute → result → checkpoint).

Model calls go through the one model interface (:mod:`retrace.agent.model`): the loop does not
know which provider answers. The request carries prompt-cache breakpoints where the provider
honours them (:mod:`retrace.agent.caching`) and is not checked locally (the provider judges it;
the fake one in tests and the demo checks the same rules). Rate limits, overload and server
errors are retried (``error`` events with ``retrying=true``),
after the wait the API asks for (``retry-after-ms`` / ``retry-after``, bounded) or with
exponential backoff (:mod:`retrace.agent.retry`), and surfaced when they persist. Every reply's
usage (uncached input, cache writes and reads, output) is journaled with its cost (unknown where
the provider has no price). A broken
reply (malformed or cut-off stream) ends the turn with a clean error and stores nothing of the
partial reply, so no half tool call ever runs. Engine calls are blocking: they run in a thread,
serialised by :class:`EngineGate`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from retrace.agent.caching import with_cache_breakpoints
from retrace.agent.compaction import (
    SUMMARY_SYSTEM,
    estimate_tokens,
    plan_compaction,
    summarized_api_messages,
    summary_messages,
)
from retrace.agent.compaction import compact as compact_history
from retrace.agent.conversation import CANCELLED, NOT_RUN_STOPPED, Conversation, tool_uses
from retrace.agent.model.interface import ModelError, ModelReply, ModelRequest, ReplyUsage
from retrace.agent.notifications import AgentError, TextDelta, Usage
from retrace.agent.prompt import agent_system_prompt
from retrace.agent.retry import retry_delay
from retrace.agent.runtime import Runtime, append_message, close_open_batch, journal
from retrace.agent.subagents.runner import Subagents
from retrace.agent.tool_call import (
    CheckpointFailedError,
    ToolCall,
    begin_tool,
    end_unrun,
    finish_tool,
    recorded_input,
)
from retrace.agent.tools import tool_schemas
from retrace.agent.tools.task import NAME as TASK_TOOL
from retrace.agent.tools.task import valid_task_input
from retrace.engine.store.events import UsageEvent
from retrace.redact import redact

log = logging.getLogger(__name__)
T = TypeVar("T")

NOT_RUN_CUT_OFF = (
    "not run: the model's reply was cut off at max_tokens, so its tool input may be incomplete; "
    "raise retrace.maxTokens or ask for smaller steps"
)


class ModelCallError(Exception):
    """A model call failed for good; ``message`` is the one line for the user."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


# --------------------------------------------------------------------------- model calls


async def with_retries(
    rt: Runtime, session_id: str, turn_id: str | None, attempt: Callable[[], Awaitable[T]]
) -> T:
    """Run ``attempt``, retrying transient failures (:attr:`ModelError.retryable`) after the wait
    the service asks for, else with exponential backoff. The wait is an ``asyncio.sleep``:
    cancelling the turn ends it."""
    retries = rt.settings.max_retries
    for number in range(retries + 1):
        try:
            return await attempt()
        except ModelError as e:
            if not e.retryable:
                raise ModelCallError(f"the model call failed: {e}", e.detail) from e
            if number == retries:
                raise ModelCallError(f"the model call failed after {retries} retries: {e}", e.detail) from e
            settings = rt.settings
            delay = retry_delay(e.wait_s, number, settings.retry_base_delay_s, settings.max_retry_wait_s)
            if delay is None:
                raise ModelCallError(
                    f"the model call failed: {e}; the API asks to wait {e.wait_s:g}s, longer "
                    f"than Retrace waits ({rt.settings.max_retry_wait_s:g}s): try again later",
                    e.detail,
                ) from e
            await rt.host.emit(
                AgentError(
                    session_id=session_id,
                    turn_id=turn_id,
                    message=f"{e}; retrying in {delay:g}s ({number + 1}/{retries})",
                    detail=e.detail,
                    retrying=True,
                )
            )
            await asyncio.sleep(delay)
        except Exception as e:  # a provider's contract is ModelError only; never a crash for this
            message = f"the model's reply could not be read: {type(e).__name__}: {e}"[:300]
            raise ModelCallError(message, str(e)) from e
    raise AssertionError("unreachable")


def request_body(rt: Runtime, conv: Conversation) -> ModelRequest:
    """The next request: deterministic for a given history (so its prefixes are cached), with
    cache breakpoints where the provider honours them."""
    body: dict[str, Any] = {
        "system": agent_system_prompt(
            rt.engine.workspace, conv, may_delegate=rt.may_delegate, folders=rt.workspace_folders()
        ),
        "tools": tool_schemas(rt.tools, rt.extra_tools),
        "messages": conv.api_messages(),
    }
    if rt.settings.prompt_caching and rt.client.caching:
        body = with_cache_breakpoints(body)
    return ModelRequest(
        model=rt.settings.model,
        max_tokens=rt.settings.max_tokens,
        system=body["system"],
        tools=body["tools"],
        messages=body["messages"],
    )


async def stream_reply(rt: Runtime, conv: Conversation, turn_id: str, request: ModelRequest) -> ModelReply:
    async def on_text(text: str) -> None:
        await rt.host.emit(TextDelta(session_id=conv.session_id, turn_id=turn_id, text=text))

    async def attempt() -> ModelReply:
        return await rt.client.stream(request, on_text)

    return await with_retries(rt, conv.session_id, turn_id, attempt)


async def record_usage(rt: Runtime, conv: Conversation, turn_id: str | None, usage: ReplyUsage) -> None:
    """Journal one reply's usage (uncached input, cache writes and reads, output) and its cost
    (``None``: the provider's price is unknown), and tell the client."""
    await journal(
        rt,
        conv,
        UsageEvent(
            turn_id=turn_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cost_usd=rt.client.cost_usd(rt.settings.model, usage),
            model=rt.settings.model,
        ),
    )
    await rt.host.emit(
        Usage(
            session_id=conv.session_id,
            turn_id=turn_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            total_input_tokens=conv.usage.input_tokens,
            total_output_tokens=conv.usage.output_tokens,
            total_cache_creation_input_tokens=conv.usage.cache_creation_input_tokens,
            total_cache_read_input_tokens=conv.usage.cache_read_input_tokens,
            cost_usd=conv.usage.cost_usd,
            cost_unknown=conv.usage.cost_unknown,
            turn=conv.turn_usage.get(turn_id) if turn_id is not None else None,
        )
    )


def redact_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A reply's blocks with known secret formats redacted in its text and tool inputs (ids,
    names and structure untouched)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "text":
            out.append({**block, "text": redact(block["text"])})
        elif block["type"] == "tool_use":
            out.append({**block, "input": recorded_input(block["input"])})
        else:
            out.append(block)
    return out


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


async def next_reply(rt: Runtime, conv: Conversation, turn_id: str) -> ModelReply | None:
    """One model call on the current history; ``None`` (the error already reported) if it failed."""
    sid = conv.session_id
    body = request_body(rt, conv)
    try:
        reply = await stream_reply(rt, conv, turn_id, body)
    except ModelCallError as e:
        await rt.host.emit(AgentError(session_id=sid, turn_id=turn_id, message=str(e), detail=e.detail))
        return None
    await record_usage(rt, conv, turn_id, reply.usage)
    if reply.usage.reported:
        conv.measured = (conv.head, reply.usage.counted_input)
    return reply


# --------------------------------------------------------------------------- summaries


async def write_summary(
    rt: Runtime, conv: Conversation, turn_id: str | None, messages: list[dict[str, Any]]
) -> str:
    """The model's summary of API ``messages`` (the summary mode's one model call; its usage is
    counted); :class:`ModelCallError` when it fails or says nothing."""
    request = summary_messages(messages, max_chars=rt.settings.window() * 2)

    summary_request = ModelRequest(
        model=rt.settings.model,
        max_tokens=min(rt.settings.max_tokens, 4096),
        system=SUMMARY_SYSTEM,
        messages=request,
    )

    async def attempt() -> ModelReply:
        return await rt.client.complete(summary_request)

    reply = await with_retries(rt, conv.session_id, turn_id, attempt)
    await record_usage(rt, conv, turn_id, reply.usage)
    text = "\n".join(str(b["text"]) for b in reply.blocks if b["type"] == "text").strip()
    if not text:
        raise ModelCallError("the model returned no text")
    return redact(str(text))


async def compact_if_due(rt: Runtime, conv: Conversation, turn_id: str) -> bool:
    """Compact the conversation when the next request would pass the threshold
    (:mod:`retrace.agent.compaction`); ``False`` when that failed (reported; the turn goes on
    with the whole history and tries no more)."""

    def fixed_tokens() -> int:
        system = agent_system_prompt(
            rt.engine.workspace, conv, may_delegate=rt.may_delegate, folders=rt.workspace_folders()
        )
        return estimate_tokens([system, tool_schemas(rt.tools)])

    plan = plan_compaction(conv, rt.settings, fixed_tokens)
    if plan is None:
        return True
    try:
        summary = await write_summary(rt, conv, turn_id, summarized_api_messages(conv, plan))
    except ModelCallError as e:
        message = f"automatic compaction failed ({e}); going on with the whole conversation"
        await rt.host.emit(AgentError(session_id=conv.session_id, turn_id=turn_id, message=message))
        return False
    await compact_history(rt, conv, turn_id, plan, summary)
    return True


async def keep_reply(
    rt: Runtime, conv: Conversation, turn_id: str, reply: ModelReply
) -> tuple[str, list[dict[str, Any]]] | StopReason:
    """Store the reply; its message id and the tool calls to run, or the stop reason when the
    turn ends with it."""
    blocks = reply.blocks
    if not blocks:
        return "refusal" if reply.stop_reason == "refusal" else "end_turn"
    if reply.stop_reason == "refusal":
        # A refused reply is shown but never acted on: its tool calls (if any) are dropped.
        blocks = [b for b in blocks if b["type"] == "text"]
        if blocks:
            await append_message(
                rt, conv, "assistant", redact_blocks(blocks), turn_id=turn_id, kind="assistant"
            )
        return "refusal"
    # Journaled (and kept for the next requests) with known secret formats redacted; the tool
    # calls run with the real input.
    assistant_id = await append_message(
        rt, conv, "assistant", redact_blocks(blocks), turn_id=turn_id, kind="assistant"
    )
    uses = tool_uses(blocks)
    if not uses:
        return "max_tokens" if reply.stop_reason == "max_tokens" else "end_turn"
    if reply.stop_reason == "max_tokens":
        # The reply was cut off: its last tool input may be incomplete (a write_file with half
        # its content). Nothing of it runs; every call is answered so the history stays valid.
        await close_open_batch(rt, conv, turn_id, NOT_RUN_CUT_OFF)
        await rt.host.emit(AgentError(session_id=conv.session_id, turn_id=turn_id, message=NOT_RUN_CUT_OFF))
        return "max_tokens"
    return assistant_id, uses


def _task_group(uses: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """The ``task`` calls from ``start`` on that come one after another (they run together)."""
    group = []
    for use in uses[start:]:
        if use.get("name") != TASK_TOOL:
            break
        group.append(use)
    return group


async def run_tools(
    rt: Runtime, conv: Conversation, turn_id: str, assistant_id: str, uses: list[dict[str, Any]]
) -> StopReason | None:
    """Run the reply's tool calls in order and answer them; a stop reason if the turn must end.

    ``task`` calls that come one after another are begun together (journaled, allowed, their
    children started) and then finished in order, so the children work in parallel while each
    call still ends with its own checkpoint in call order (:mod:`retrace.agent.subagents`)."""
    results: list[dict[str, Any]] = []
    cursor = f"{assistant_id}#"
    subagents = Subagents(rt, conv, turn_id, run_turn)
    tasks = subagents if rt.may_delegate else None
    index = 0
    try:
        while index < len(uses):
            missing = workspace_missing(rt)
            if missing is not None:
                # Pause, never pretend: a capture now would record every file as deleted and a
                # tool would recreate an empty workspace folder.
                await close_open_batch(rt, conv, turn_id, f"not run: {missing}")
                await rt.host.emit(AgentError(session_id=conv.session_id, turn_id=turn_id, message=missing))
                return "error"
            group = _task_group(uses, index) if tasks is not None else []
            group = group or [uses[index]]
            begun = [
                await begin_tool(rt, conv, use, turn_id=turn_id, assistant_id=assistant_id, cursor=cursor)
                for use in group
            ]
            for call in begun:
                args = valid_task_input(call.input) if isinstance(call, ToolCall) and tasks else None
                if isinstance(call, ToolCall) and args is not None:
                    await subagents.start(call.id, args)
            for number, call in enumerate(begun):
                try:
                    results.append(
                        await finish_tool(rt, conv, call, tasks) if isinstance(call, ToolCall) else call
                    )
                except CheckpointFailedError as e:
                    # Pause, never pretend: the remaining calls are answered (the model learns why).
                    await end_unrun(
                        rt, conv, [c for c in begun[number + 1 :] if isinstance(c, ToolCall)], str(e)
                    )
                    await close_open_batch(rt, conv, turn_id, f"not run: {e}")
                    return "error"
                cursor = f"{assistant_id}#{group[number]['id']}"
            index += len(group)
    finally:
        await subagents.close()
    await append_message(rt, conv, "user", results, turn_id=turn_id, kind="toolResults")
    return None


async def run_turn(
    rt: Runtime,
    conv: Conversation,
    turn_id: str,
    prompt_blocks: list[dict[str, Any]],
    attachments: list[str] | None = None,
) -> str:
    """Run one turn to its end; returns the TurnFinished stop reason. Cancellation propagates."""
    await append_message(
        rt, conv, "user", prompt_blocks, turn_id=turn_id, kind="prompt", attachments=attachments
    )
    compacting = True
    for _ in range(rt.settings.max_iterations):
        if compacting:
            compacting = await compact_if_due(rt, conv, turn_id)
        reply = await next_reply(rt, conv, turn_id)
        if reply is None:
            return "error"
        kept = await keep_reply(rt, conv, turn_id, reply)
        if isinstance(kept, str):
            return kept
        stop = await run_tools(rt, conv, turn_id, *kept)
        if stop is not None:
            return stop
    return "max_iterations"


async def stop_cleanly(rt: Runtime, conv: Conversation, turn_id: str | None) -> None:
    """After a cancel: answer every unanswered call so the history stays valid."""
    await close_open_batch(rt, conv, turn_id, f"{NOT_RUN_STOPPED} ({CANCELLED})")
