"""What the user can do with a session's children: list them, read a child's own timeline,
apply a child's result (again) to the workspace, and discard a child's files.

Applying merges the child's net change (its first checkpoint → its last) into the workspace
exactly as the ``task`` call's end does (:mod:`.apply`: three-way, conflicts reported and left
alone), recorded as one ``manual`` checkpoint of the parent session labelled as the child's
result; changes someone else made before it are recorded first as their own ``external``
checkpoint. It is how a child that was interrupted, stopped early or whose merge was taken back
by a restore gets its work into the workspace; it is refused while the session runs a turn.
Discarding deletes the child's workspace copy and store (its timeline) and journals it; a
running child cannot be discarded.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from retrace.agent.conversation import Conversation
from retrace.agent.runtime import Runtime, journal
from retrace.agent.subagents.apply import MergeOutcome, merge_into, net_change
from retrace.agent.subagents.layout import TaskPaths
from retrace.agent.subagents.topology import fold
from retrace.agent.tool_call import emit_checkpoint
from retrace.agent.tools.base import ToolContext
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import TaskEvent

T = TypeVar("T")


class UnknownTaskError(RetraceError):
    code = "unknownTask"


@dataclass
class TaskApplied:
    checkpoint: Checkpoint | None
    """``None`` when nothing could be written (every path a conflict, or no change)."""
    written: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)


class TaskService:
    def __init__(
        self,
        runtime: Callable[[], Runtime],
        conversation: Callable[[str], Awaitable[Conversation]],
        require_idle: Callable[[str], None],
    ) -> None:
        self._runtime = runtime
        self._conversation = conversation
        self._require_idle = require_idle

    async def children(self, session_id: str) -> list[TaskEvent]:
        rt = self._runtime()
        await self._conversation(session_id)  # an unknown session is refused here
        events = await rt.gate.call(lambda: list(rt.engine.events(session_id)))
        return list(fold(events).values())

    async def _find(self, session_id: str, task_id: str) -> tuple[TaskEvent, TaskPaths]:
        for task in await self.children(session_id):
            if task.task_id == task_id:
                paths = TaskPaths.from_rel(self._runtime().engine.store_dir, task.store)
                return task, paths
        raise UnknownTaskError(f"session {session_id} has no subagent {task_id[:100]!r}")

    async def _open_child(self, paths: TaskPaths) -> Engine:
        if not paths.store.is_dir():
            raise UnknownTaskError(f"the subagent's timeline at {paths.store} was discarded")
        return await asyncio.to_thread(
            Engine.open, paths.work, paths.store, readonly=True, config=EngineConfig(watcher=False)
        )

    async def timeline(self, session_id: str, task_id: str) -> list[Checkpoint]:
        """The child's own checkpoints, oldest first."""
        return await self.read(session_id, task_id, lambda child: child.timeline())

    async def read(self, session_id: str, task_id: str, query: Callable[[Engine], T]) -> T:
        """``query(engine)`` on the child's own store, opened read-only for it (in a thread)."""
        _, paths = await self._find(session_id, task_id)
        child = await self._open_child(paths)
        try:
            return await asyncio.to_thread(query, child)
        finally:
            child.close()

    async def write(self, session_id: str, task_id: str, change: Callable[[Engine], T]) -> T:
        """``change(engine)`` on the child's own store opened as its writer (a restore inside
        the child's timeline); never while the child runs."""
        task, paths = await self._find(session_id, task_id)
        if task.status == "running":
            raise RetraceError(f"subagent {task_id} is running; its workspace cannot be changed now")
        if not paths.store.is_dir():
            raise UnknownTaskError(f"the subagent's timeline at {paths.store} was discarded")

        def run() -> T:
            with Engine.open(paths.work, paths.store, config=EngineConfig(watcher=False)) as child:
                return change(child)

        return await asyncio.to_thread(run)

    async def apply(self, session_id: str, task_id: str) -> TaskApplied:
        self._require_idle(session_id)
        task, paths = await self._find(session_id, task_id)
        if task.status == "running":
            raise RetraceError(f"subagent {task_id} is still running; wait for it to end")
        child = await self._open_child(paths)
        try:
            start = await asyncio.to_thread(lambda: child.timeline()[0].id)
            change = await asyncio.to_thread(net_change, child, start)
        finally:
            child.close()
        rt = self._runtime()
        ctx = ToolContext(
            workspace=rt.engine.workspace,
            engine_config=rt.engine.config,
            dirty_paths=frozenset(rt.host.dirty_paths()),
        )

        def merge_and_record() -> tuple[MergeOutcome, Checkpoint | None]:
            rt.engine.record_external(session_id=session_id)
            merged = merge_into(ctx, change)
            if not merged.written:
                return merged, None
            cp = rt.engine.checkpoint(
                f"apply subagent result: {task.description}",
                merged.written,
                kind="manual",
                session_id=session_id,
                meta={"task": {"id": task.task_id, "description": task.description, "applied": True}},
            )
            return merged, cp

        merged, cp = await rt.gate.call(merge_and_record)
        if cp is not None:
            await emit_checkpoint(rt, session_id, None, cp)
        return TaskApplied(
            cp, merged.written, [{"path": c.path, "reason": c.reason} for c in merged.conflicts]
        )

    async def discard(self, session_id: str, task_id: str) -> None:
        task, paths = await self._find(session_id, task_id)
        if task.status == "running":
            raise RetraceError(f"subagent {task_id} is still running; it cannot be discarded")
        await asyncio.to_thread(shutil.rmtree, paths.root, True)
        conv = await self._conversation(session_id)
        await journal(self._runtime(), conv, task.model_copy(update={"status": "discarded"}))
