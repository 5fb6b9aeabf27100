"""One tool call end to end, and the checkpoint that ends it.

``toolCallIntent`` is journaled → :func:`record_external` (changes made by someone else since the
last checkpoint become an ``external`` checkpoint, never agent work) → permission → execute →
``toolCallResult`` (built only by :func:`tool_result_event`) → ``engine.checkpoint(kind="tool")``
carrying the editor state, the conversation cursor and the session's terminal state (recorded
with secrets hidden, :mod:`retrace.agent.terminal`) → ``CheckpointCreated``. A denied call
changes nothing and gets no checkpoint; a cancelled one still gets its checkpoint (the tool may
have changed files before it stopped).

The hot path (a tool's result → its ``CheckpointCreated``) is ONE engine call and ONE durable
append: the result line is written without its own ``fdatasync`` and the checkpoint line after
it, in the same session journal, whose ``fdatasync`` makes both durable before the client is
told (:func:`checkpoint_tool`). A kill between the two lines leaves the result (the write
completed) exactly as two durable appends did; a power loss before the checkpoint's sync loses
both, which resume treats as a crash mid-call (the call is ``interrupted``, the workspace
re-captured). If the checkpoint fails, the result becomes durable with the next durable append.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from retrace.agent.conversation import CANCELLED, Conversation, now_iso, tool_result_block
from retrace.agent.folders import checkpoint_other_folders, record_other_folders
from retrace.agent.notifications import (
    AgentError,
    CheckpointCreated,
    PermissionRequested,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallStatus,
)
from retrace.agent.rewind import newest_checkpoint
from retrace.agent.runtime import Runtime, journal
from retrace.agent.side_effects import side_effect_meta
from retrace.agent.tools import ToolContext, ToolResult, execute
from retrace.agent.tools.base import TaskRunner
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, CheckpointKind
from retrace.engine.store.events import (
    CheckpointFailedEvent,
    PermissionAlwaysEvent,
    ToolCallIntentEvent,
    ToolCallResultEvent,
)
from retrace.redact import redact, redact_json


class CheckpointFailedError(Exception):
    """A tool ran but its checkpoint could not be recorded (store full, read-only…): the turn
    pauses so nothing more runs unrecorded; the user already got the engine's error."""


async def emit_checkpoint(rt: Runtime, session_id: str, turn_id: str | None, cp: Checkpoint) -> None:
    await rt.host.emit(CheckpointCreated(session_id=session_id, turn_id=turn_id, checkpoint=cp))


async def record_external(rt: Runtime, conv: Conversation, turn_id: str | None, cursor: str | None) -> None:
    """Changes nobody announced become an ``external`` checkpoint before the agent acts again;
    while background commands run (or ended since their last capture) they are theirs: a
    ``background`` checkpoint labelled with their commands (:func:`record_background`)."""
    if await record_background(rt, conv, turn_id, cursor):
        return
    context = {"conversation": cursor, "terminal": conv.terminal_session().state.record()}
    await _record_foreign(rt, conv.session_id, turn_id, "external", context)
    if rt.folders is not None:  # the other folders' own unannounced changes, each in its store
        _made, problems = await record_other_folders(
            rt.folders, "external", {"session_id": conv.session_id, "turn_id": turn_id}
        )
        for problem in problems:
            await rt.host.emit(AgentError(session_id=conv.session_id, turn_id=turn_id, message=problem))


async def record_background(rt: Runtime, conv: Conversation, turn_id: str | None, cursor: str | None) -> bool:
    """At a boundary (turn start, before a tool call, turn end): commit what the background
    commands changed since the last checkpoint as their own checkpoint; ``False`` when no
    background command may have changed anything (nothing was captured)."""
    tasks = rt.background.window() if rt.background is not None else []
    if not tasks:
        return False
    assert rt.background is not None
    ended = [t for t in tasks if t.ended]  # ended before this capture: all their writes are in it
    context = {
        "conversation": cursor,
        "label": redact(rt.background.label(tasks)),
        "meta": redact_json(rt.background.meta(tasks)),
        "terminal": conv.terminal_session().state.record(),
    }
    if await _record_foreign(rt, conv.session_id, turn_id, "background", context):
        rt.background.settle(ended)
    return True


async def _record_foreign(
    rt: Runtime, session_id: str, turn_id: str | None, kind: CheckpointKind, context: dict[str, Any]
) -> bool:
    """Capture unannounced changes as a ``kind`` checkpoint; whether the capture succeeded."""
    try:
        cp = await rt.gate.call(
            rt.engine.record_foreign,
            kind,
            {"session_id": session_id, "turn_id": turn_id, "editor_state": rt.host.editor_state(), **context},
        )
    except RetraceError as e:
        await rt.host.emit(AgentError(session_id=session_id, turn_id=turn_id, message=str(e)))
        return False
    if cp is not None:
        await emit_checkpoint(rt, session_id, turn_id, cp)
    return True


def recorded_input(tool_input: dict[str, Any]) -> dict[str, Any]:
    """A tool call's input as the journal keeps it: known secret formats redacted
    (:mod:`retrace.redact`); the call itself runs with the real input."""
    redacted = redact_json(tool_input)
    return redacted if isinstance(redacted, dict) else tool_input


def recorded_output(rt: Runtime, tool: str, output: str) -> str:
    """A tool's output as it is journaled, shown and sent to the model: known secret formats
    redacted, except the output of a ``read`` tool (workspace files, whose content the
    checkpoint holds anyway: redacting it would only make edits of those lines fail)."""
    spec = rt.spec(tool)
    if spec is not None and spec.category == "read":
        return output
    return redact(output)


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant message, as the model asked for it."""

    session_id: str
    turn_id: str
    assistant_id: str
    id: str
    tool: str
    input: dict[str, Any]


def tool_result_event(
    *,
    call_id: str,
    tool: str,
    turn_id: str | None,
    status: ToolCallStatus,
    output: str,
    is_error: bool = True,
    duration_ms: float = 0.0,
    changed_paths: list[str] | None = None,
) -> ToolCallResultEvent:
    """How a tool call ended: the one builder of ``toolCallResult`` (a finished call, a denied
    or cancelled one, and one found interrupted by a crash)."""
    return ToolCallResultEvent(
        id=call_id,
        tool=tool,
        status=status,
        output=output,
        is_error=is_error,
        duration_ms=duration_ms,
        changed_paths=changed_paths or [],
        turn_id=turn_id,
    )


def result_of(
    call: ToolCall,
    status: ToolCallStatus,
    output: str,
    *,
    is_error: bool = True,
    ms: float = 0.0,
    changed_paths: list[str] | None = None,
) -> ToolCallResultEvent:
    """How ``call`` ended (journaled alone when it gets no checkpoint: denied, cancelled while
    asking, an unknown tool; else with its checkpoint, :func:`checkpoint_tool`)."""
    return tool_result_event(
        call_id=call.id,
        tool=call.tool,
        turn_id=call.turn_id,
        status=status,
        output=output,
        is_error=is_error,
        duration_ms=ms,
        changed_paths=changed_paths,
    )


async def emit_finished(
    rt: Runtime, call: ToolCall, status: ToolCallStatus, output: str, *, ms: float, paths: list[str]
) -> None:
    await rt.host.emit(
        ToolCallFinished(
            session_id=call.session_id,
            turn_id=call.turn_id,
            tool_call_id=call.id,
            tool=call.tool,
            status=status,
            output=output,
            duration_ms=ms,
            changed_paths=paths,
        )
    )


async def start_tool_call(rt: Runtime, conv: Conversation, call: ToolCall, cursor: str) -> None:
    """Announce and journal the intent, then record what others changed since the last checkpoint."""
    await rt.host.emit(
        ToolCallStarted(
            session_id=call.session_id,
            turn_id=call.turn_id,
            tool_call_id=call.id,
            tool=call.tool,
            input=call.input,
        )
    )
    await journal(
        rt,
        conv,
        ToolCallIntentEvent(
            id=call.id,
            tool=call.tool,
            input=recorded_input(call.input),
            turn_id=call.turn_id,
            message_id=call.assistant_id,
            created_at=now_iso(),
        ),
    )
    rt.replay.add(call.session_id, conv.tool_calls[call.id])
    await record_external(rt, conv, call.turn_id, cursor)


async def refusal(rt: Runtime, conv: Conversation, call: ToolCall) -> str | None:
    """Ask the policy (and the user, when it says ``ask``). A denied call is ended here and its
    output (for the model) returned; ``None``: the call may run."""
    sid = call.session_id
    anchor: str | None = None
    if (
        rt.spec(call.tool) is not None
        and rt.policy.setting_for(call.tool) == "ask"
        and not rt.policy.remembered(sid, call.tool)
    ):
        anchor = await rt.gate.run(newest_checkpoint)
        await rt.host.emit(
            PermissionRequested(
                session_id=sid, turn_id=call.turn_id, request_id=call.id, tool=call.tool, input=call.input
            )
        )
    try:
        decision = await rt.policy.decide(
            rt.host, sid, call.tool, call.input, request_id=call.id, anchor=anchor
        )
    except asyncio.CancelledError:  # cancelled while the user was being asked: nothing ran
        await journal(rt, conv, result_of(call, "cancelled", CANCELLED))
        await emit_finished(rt, call, "cancelled", CANCELLED, ms=0.0, paths=[])
        raise
    if decision != "deny":
        if anchor is not None and rt.policy.remembered(sid, call.tool):
            await journal(rt, conv, PermissionAlwaysEvent(tool=call.tool, after=anchor))
        return None
    output = f"permission denied: the user did not allow this {call.tool} call; nothing was changed"
    await journal(rt, conv, result_of(call, "denied", output))
    await emit_finished(rt, call, "denied", output, ms=0.0, paths=[])
    return output


async def execute_tool(
    rt: Runtime, conv: Conversation, call: ToolCall, tasks: TaskRunner | None = None
) -> tuple[ToolResult, float]:
    """Run the tool; returns its result and duration (ms). A cancel mid-run still ends the call
    with a result and a checkpoint (the tool may have changed files before it stopped)."""
    folders = rt.workspace_folders()
    ctx = ToolContext(
        folders=folders,
        folder_dirty={f.root: rt.folders.dirty_paths(f.root) for f in folders[1:]} if rt.folders else {},
        workspace=rt.engine.workspace,
        engine_config=rt.engine.config,
        dirty_paths=frozenset(rt.host.dirty_paths()),
        command_timeout_s=rt.settings.command_timeout_s,
        output_cap_bytes=rt.settings.output_cap_bytes,
        call_id=call.id,
        tasks=tasks,
        terminal=conv.terminal_session(),
        background=(
            rt.background.launcher(call.session_id, lambda: rt.gate.run(newest_checkpoint))
            if rt.background is not None
            else None
        ),
    )
    started = time.perf_counter()
    try:
        if rt.tools is not None and call.tool not in rt.tools:
            result = ToolResult(f"tool {call.tool!r} is not available to this agent", is_error=True)
        else:
            result = await execute(call.tool, call.input, ctx, rt.extra_tools)
    except asyncio.CancelledError:
        ms = (time.perf_counter() - started) * 1000
        ended = result_of(call, "cancelled", CANCELLED, ms=ms)
        await checkpoint_tool(rt, conv, call, ToolResult(CANCELLED, True, None), ended)
        await emit_finished(rt, call, "cancelled", CANCELLED, ms=ms, paths=[])
        raise
    return result, (time.perf_counter() - started) * 1000


async def end_unrun(rt: Runtime, conv: Conversation, calls: list[ToolCall], why: str) -> None:
    """Journal that begun calls were not run after all (a checkpoint before them failed)."""
    for call in calls:
        await journal(rt, conv, result_of(call, "cancelled", f"not run: {why}"))
        await emit_finished(rt, call, "cancelled", f"not run: {why}", ms=0.0, paths=[])


async def begin_tool(
    rt: Runtime, conv: Conversation, use: dict[str, Any], *, turn_id: str, assistant_id: str, cursor: str
) -> ToolCall | dict[str, Any]:
    """Announce, journal and decide one tool call: the call to run, or (denied) its
    ``tool_result`` block. ``cursor``: the conversation position before this call (stamped on
    an external checkpoint)."""
    call = ToolCall(
        conv.session_id, turn_id, assistant_id, use["id"], use["name"], dict(use.get("input") or {})
    )
    await start_tool_call(rt, conv, call, cursor)
    denied = await refusal(rt, conv, call)
    if denied is not None:
        return tool_result_block(call.id, denied, is_error=True)
    return call


async def run_tool(
    rt: Runtime, conv: Conversation, use: dict[str, Any], *, turn_id: str, assistant_id: str, cursor: str
) -> dict[str, Any]:
    """Run one tool call end to end; returns its ``tool_result`` block."""
    begun = await begin_tool(rt, conv, use, turn_id=turn_id, assistant_id=assistant_id, cursor=cursor)
    if isinstance(begun, dict):
        return begun
    return await finish_tool(rt, conv, begun)


async def finish_tool(
    rt: Runtime, conv: Conversation, call: ToolCall, tasks: TaskRunner | None = None
) -> dict[str, Any]:
    """Run a call :func:`begin_tool` allowed, record its checkpoint; its ``tool_result`` block."""
    result, ms = await execute_tool(rt, conv, call, tasks)
    result.output = recorded_output(rt, call.tool, result.output)
    note = rt.background.overlap_note() if rt.background is not None else None
    if result.changed_paths is None and note is not None:  # its checkpoint holds their changes too
        result.output = f"{result.output}\n{note}"
    status: ToolCallStatus = "error" if result.is_error else "ok"
    ended = result_of(
        call, status, result.output, is_error=result.is_error, ms=ms, changed_paths=result.changed_paths
    )
    known = rt.spec(call.tool) is not None
    if known:
        cp = await checkpoint_tool(rt, conv, call, result, ended)
    else:
        await journal(rt, conv, ended)
        cp = None
    paths = result.changed_paths
    if paths is None:  # a shell command: what changed is what the engine detected
        paths = [f.path for f in cp.files] if cp is not None else []
    await emit_finished(rt, call, status, result.output, ms=ms, paths=paths)
    if known and cp is None:
        raise CheckpointFailedError(
            f"Retrace could not record a checkpoint after {call.tool} call {call.id}; "
            "the agent paused so that nothing runs unrecorded"
        )
    return tool_result_block(call.id, result.output, is_error=result.is_error)


async def checkpoint_tool(
    rt: Runtime, conv: Conversation, call: ToolCall, result: ToolResult, ended: ToolCallResultEvent
) -> Checkpoint | None:
    """Journal how the call ended (``ended``) and the checkpoint that ends it, whatever way it
    ended, in one engine call whose checkpoint append makes both lines durable; ``None``
    (reported) if the engine could not record the checkpoint. A failure to journal the result
    itself is raised, as any journal write failure is."""
    spec = rt.spec(call.tool)
    engine, sid = rt.engine, conv.session_id
    editor_state = rt.host.editor_state()
    terminal = conv.terminal_session().state.record()
    meta = {
        **(result.meta or {}),
        **side_effect_meta(call.tool, call.input.get("command"), str(engine.workspace)),
    }
    label = redact(spec.summary(call.input)) if spec else call.tool
    made, problems = await _other_folders_after(rt, call, result, label, sid)
    if made:
        meta["folders"] = made

    def commit() -> Checkpoint | RetraceError:
        engine.append_event(ended, session_id=sid, durable=False)
        conv.apply_written(ended)
        try:
            return engine.checkpoint(
                label,
                result.changed_paths,
                kind="tool",
                session_id=sid,
                turn_id=call.turn_id,
                tool=call.tool,
                tool_call_id=call.id,
                editor_state=editor_state,
                conversation=f"{call.assistant_id}#{call.id}",
                meta=meta or None,
                terminal=terminal,
            )
        except RetraceError as e:
            return e

    cp = await rt.gate.call(commit)
    if isinstance(cp, RetraceError):
        failed = CheckpointFailedEvent(kind="tool", error=str(cp), tool_call_id=call.id, turn_id=call.turn_id)
        await rt.gate.call(_record_failure, engine, failed, sid)
        await rt.host.emit(
            AgentError(
                session_id=conv.session_id,
                turn_id=call.turn_id,
                message=f"checkpoint after {call.tool} failed: {cp}",
            )
        )
        return None
    record = conv.tool_calls.get(call.id)
    if record is not None:
        record.checkpoint_id = cp.id
    await emit_checkpoint(rt, conv.session_id, call.turn_id, cp)
    if problems:  # another folder's checkpoint failed: pause, as for this folder's
        await rt.host.emit(
            AgentError(
                session_id=sid,
                turn_id=call.turn_id,
                message=f"checkpoint after {call.tool} failed in another folder: {'; '.join(problems)}",
            )
        )
        return None
    return cp


async def _other_folders_after(
    rt: Runtime, call: ToolCall, result: ToolResult, label: str, sid: str
) -> tuple[dict[str, str], list[str]]:
    """The call's checkpoints in the other folders of a multi-root workspace: the paths a file
    tool wrote there, or what a command (``changed_paths`` ``None``: detect) changed there."""
    if rt.folders is None:
        return {}, []
    if result.folder_paths:
        return await checkpoint_other_folders(
            rt.folders,
            result.folder_paths,
            label=label,
            session_id=sid,
            turn_id=call.turn_id,
            tool=call.tool,
            tool_call_id=call.id,
        )
    if result.changed_paths is None:
        context = {"label": label, "session_id": sid, "turn_id": call.turn_id, "tool": call.tool}
        return await record_other_folders(rt.folders, "tool", {**context, "tool_call_id": call.id})
    return {}, []


def _record_failure(engine: Engine, event: CheckpointFailedEvent, session_id: str) -> None:
    """Put a failed checkpoint on record (for the metrics); a journal that cannot take even
    this line leaves it unrecorded."""
    with contextlib.suppress(RetraceError, OSError):
        engine.append_event(event, session_id=session_id, durable=False)
