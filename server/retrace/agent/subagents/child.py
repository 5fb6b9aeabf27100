"""One child agent run: its own engine (store and workspace copy), conversation and host.

The child gets a fresh conversation holding only its brief, the parent's model settings and
client, a permission policy no wider than the parent's (:meth:`PermissionPolicy.for_child`),
and every tool but ``task`` (or the subset the parent named); it runs no background command
(its work must be over when it ends, so nothing of it keeps changing its copy). Its permission questions go to
the parent's host (the user sees them in the parent's session, marked as the subagent's); its
other events are not the parent's conversation: the parent's host hears a :class:`TaskProgress`
per child tool call (once it and its checkpoint are done) instead. Its engine is closed when it
ends, whatever way it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from retrace.agent.conversation import CANCELLED, NOT_RUN_STOPPED, Conversation, new_id, now_iso
from retrace.agent.notifications import (
    AgentHost,
    CheckpointCreated,
    PermissionDecision,
    PermissionRequest,
    TaskProgress,
    ToolCallFinished,
)
from retrace.agent.recent_calls import ReplayBuffer
from retrace.agent.runtime import Runtime, close_open_batch, journal
from retrace.agent.subagents.apply import NetChange, net_change
from retrace.agent.subagents.layout import TaskPaths
from retrace.agent.tools import TOOLS
from retrace.agent.tools.task import NAME as TASK_TOOL
from retrace.agent.tools.task import TaskInput
from retrace.engine.engine import Engine
from retrace.engine.folders import Folder
from retrace.engine.gate import EngineGate
from retrace.engine.store.events import TurnEvent

TurnRunner = Callable[[Runtime, Conversation, str, list[dict[str, Any]]], Awaitable[str]]
"""The agent loop's ``run_turn`` (handed in: the loop is what starts children)."""

ANSWER_CAP = 8000
"""Characters of the child's final answer the parent sees (head kept, the cut marked)."""


@dataclass
class ChildOutcome:
    stop_reason: str
    answer: str
    change: NetChange
    session_id: str
    start_id: str
    tool_calls: int = 0
    checkpoints: int = 0
    duration_ms: float = 0.0
    problems: list[str] = field(default_factory=list)


class ChildHost:
    """The child's :class:`AgentHost`: asks the user through the parent's host, reports
    progress to it, and has no editor (its workspace is a copy nobody has open)."""

    def __init__(
        self, parent: AgentHost, parent_session: str, task_id: str, call_id: str, description: str
    ) -> None:
        self.parent = parent
        self.parent_session = parent_session
        self.task_id = task_id
        self.call_id = call_id
        self.description = description
        self.tool_calls = 0
        self.checkpoints = 0
        self.last_tool: str | None = None

    def progress(self, status: Any = "running") -> TaskProgress:
        return TaskProgress(
            session_id=self.parent_session,
            task_id=self.task_id,
            tool_call_id=self.call_id,
            description=self.description,
            status=status,
            tool_calls=self.tool_calls,
            last_tool=self.last_tool,
        )

    async def emit(self, event: Any) -> None:
        if isinstance(event, CheckpointCreated):
            self.checkpoints += 1
        elif isinstance(event, ToolCallFinished):  # after its checkpoint
            self.tool_calls += 1
            self.last_tool = event.tool
            await self.parent.emit(self.progress())

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        asked = request.model_copy(
            update={
                "session_id": self.parent_session,
                "summary": f"[subagent: {self.description}] {request.summary}",
            }
        )
        return await self.parent.ask_permission(asked)

    def editor_state(self) -> dict[str, Any] | None:
        return None

    def dirty_paths(self) -> set[str]:
        return set()


def allowed_tools(args: TaskInput) -> frozenset[str]:
    names = set(TOOLS) - {TASK_TOOL}
    if args.tools is not None:
        names &= set(args.tools)
    return frozenset(names)


def brief(args: TaskInput, folders: tuple[Folder, ...] = ()) -> str:
    """The child's first message; ``folders``: the parent's workspace folders (several: the child
    is told its copy holds the first one only, and which names it must not create)."""
    where = ""
    if len(folders) > 1:
        others = ", ".join(f.name for f in folders[1:])
        where = (
            f"Your copy holds only the workspace folder {folders[0].name}; the other folders "
            f"({others}) are not in it, and changes under their names are not merged back: "
            "report what they need instead.\n"
        )
    return (
        f"You are a subagent working on: {args.description}\n"
        "You work in your own copy of the workspace; your file changes are merged back when you "
        f"finish. {where}End with a short report of what you did and found.\n\n"
        f"{args.prompt}"
    )


def final_answer(conv: Conversation) -> str:
    for message in reversed(conv.chain()):
        if message.role != "assistant":
            continue
        text = "\n".join(b.get("text", "") for b in message.content if b.get("type") == "text").strip()
        if text:
            if len(text) > ANSWER_CAP:
                return f"{text[:ANSWER_CAP]}\n[... {len(text) - ANSWER_CAP} characters of the answer cut ...]"
            return text
    return "(the subagent gave no final answer)"


async def run_child(
    parent: Runtime,
    *,
    paths: TaskPaths,
    args: TaskInput,
    host: ChildHost,
    parent_session: str,
    run_turn: TurnRunner,
    session_id: str,
) -> ChildOutcome:
    """Run the child to the end of its one turn in the workspace copy ``paths.work`` (already
    written) and read its net change; cancellation propagates (the engine is closed)."""
    started = time.perf_counter()
    config = parent.engine.config
    engine = await asyncio.to_thread(
        Engine.open, paths.work, paths.store, session_id=session_id, config=config
    )
    try:
        gate = EngineGate(engine)
        start_id = engine.head.id
        rt = Runtime(
            gate,
            host,
            parent.settings,
            parent.policy.for_child(parent_session, session_id),
            ReplayBuffer(),
            parent.client_of,
            tools=allowed_tools(args),
        )
        conv = Conversation.from_events(session_id, [])
        turn_id = new_id("turn")
        await journal(rt, conv, TurnEvent(turn_id=turn_id, text=args.description, created_at=now_iso()))
        try:
            first = [{"type": "text", "text": brief(args, parent.workspace_folders())}]
            stop = await run_turn(rt, conv, turn_id, first)
        except asyncio.CancelledError:
            # Its history stays valid (every call answered), so its timeline can be resumed.
            await close_open_batch(rt, conv, turn_id, f"{NOT_RUN_STOPPED} ({CANCELLED})")
            raise
        change = await gate.call(net_change, engine, start_id)
        return ChildOutcome(
            stop_reason=stop,
            answer=final_answer(conv),
            change=change,
            session_id=session_id,
            start_id=start_id,
            tool_calls=host.tool_calls,
            checkpoints=host.checkpoints,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    finally:
        await asyncio.to_thread(engine.close)
