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
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from retrace.agent.conversation import CANCELLED, NOT_RUN_STOPPED, Conversation, new_id, now_iso
from retrace.agent.notifications import AgentError
from retrace.agent.recent_calls import ReplayBuffer
from retrace.agent.resume import finish_interrupted
from retrace.agent.runtime import Runtime, close_open_batch, journal
from retrace.agent.subagents.apply import MergeOutcome, NetChange, conflict_list, merge_into, net_change
from retrace.agent.subagents.child import ChildHost, TurnRunner, allowed_tools
from retrace.agent.subagents.layout import TaskPaths
from retrace.agent.subagents.topology import fold
from retrace.agent.tool_call import emit_checkpoint
from retrace.agent.tools.base import ToolContext
from retrace.agent.tools.task import TaskInput
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.gate import EngineGate
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import TaskEvent, TurnEvent

T = TypeVar("T")


RESUMABLE = frozenset({"interrupted", "failed", "cancelled"})
RESUME_PROMPT = (
    "Your previous run was cut off before you finished (the calls that were running are marked "
    "interrupted; the workspace is as they left it). Continue the task and end with your report."
)
log = logging.getLogger(__name__)


def _net_since_start(child: Engine) -> NetChange:
    """What the child changed since its first checkpoint (the copy it started from)."""
    return net_change(child, child.timeline()[0].id)


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
        is_running: Callable[[str], bool],
        run_turn: TurnRunner,
    ) -> None:
        """``run_turn``: the agent loop's, handed in (the loop starts children; a resumed child
        runs a turn of it), so this package never imports the loop back."""
        self._runtime = runtime
        self._run_turn = run_turn
        self._conversation = conversation
        self._require_idle = require_idle
        self._is_running = is_running
        self._resuming: dict[str, asyncio.Task[None]] = {}

    async def children(self, session_id: str) -> list[TaskEvent]:
        rt = self._runtime()
        await self._conversation(session_id)  # an unknown session is refused here
        # Only the lines that can hold a ``task`` event are decoded: a long session's journal is
        # mostly messages and tool calls (10,000 checkpoints: ~2 CPU-seconds per listing before).
        events = await rt.gate.call(lambda: list(rt.engine.events(session_id, only=(TaskEvent,))))
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
            change = await asyncio.to_thread(_net_since_start, child)
        finally:
            child.close()
        return await self._merge(session_id, task, change, None)

    async def _merge(
        self, session_id: str, task: TaskEvent, change: NetChange, metrics: dict[str, Any] | None
    ) -> TaskApplied:
        """Merge a child's net change into the workspace as one ``manual`` checkpoint of the
        parent session (after recording others' changes as ``external``), and journal it."""
        rt = self._runtime()
        ctx = ToolContext(
            workspace=rt.engine.workspace,
            engine_config=rt.engine.config,
            dirty_paths=frozenset(rt.host.dirty_paths()),
            folders=rt.workspace_folders(),
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
        conflicts = conflict_list(merged)
        update: dict[str, Any] = {
            "status": "conflicts" if conflicts else "merged",
            "merged": merged.written,
            "conflicts": conflicts,
        }
        if metrics is not None:
            update["metrics"] = metrics
        await journal(rt, await self._conversation(session_id), task.model_copy(update=update))
        return TaskApplied(cp, merged.written, conflicts)

    # ------------------------------------------------------------------ resume
    async def resume(self, session_id: str, task_id: str) -> None:
        """Continue a child that was interrupted, failed or cancelled, in its own copy and
        timeline, with one more turn (it is told it was cut off); returns at once. When it ends
        well its net change is merged as :meth:`apply` does, unless the parent session is
        running a turn then (``finished``: apply it later)."""
        task, paths = await self._find(session_id, task_id)
        if task.status not in RESUMABLE:
            raise RetraceError(
                f"subagent {task_id} is {task.status}; only an interrupted, failed or cancelled one "
                "can be resumed"
            )
        if not paths.store.is_dir():
            raise UnknownTaskError(f"the subagent's timeline at {paths.store} was discarded")
        running = self._resuming.get(task_id)
        if running is not None and not running.done():
            raise RetraceError(f"subagent {task_id} is already being resumed")
        rt = self._runtime()
        await journal(rt, await self._conversation(session_id), task.model_copy(update={"status": "running"}))
        self._resuming[task_id] = asyncio.create_task(
            self._resume(session_id, task, paths), name=f"retrace-resume-{task_id}"
        )

    async def _resume(self, session_id: str, task: TaskEvent, paths: TaskPaths) -> None:
        parent = self._runtime()
        host = ChildHost(parent.host, session_id, task.task_id, task.call_id, task.description)
        status: str = "failed"
        metrics: dict[str, Any] = {}
        try:
            stop, change = await self._continue_child(parent, session_id, task, paths, host)
            metrics = {"toolCalls": host.tool_calls, "checkpoints": host.checkpoints, "stopReason": stop}
            if stop == "end_turn" and not self._is_running(session_id):
                applied = await self._merge(session_id, task, change, metrics)
                status = "journaled"  # by the merge
                await parent.host.emit(host.progress("conflicts" if applied.conflicts else "merged"))
                return
            status = "finished" if stop == "end_turn" else "failed"
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except Exception as e:  # the child could not be resumed: say so, keep its timeline
            log.exception("resuming subagent %s failed", task.task_id)
            await parent.host.emit(
                AgentError(
                    session_id=session_id, message=f"subagent {task.description!r} could not resume: {e}"
                )
            )
        finally:
            if status != "journaled":
                with contextlib.suppress(Exception):
                    conv = await self._conversation(session_id)
                    await journal(
                        parent, conv, task.model_copy(update={"status": status, "metrics": metrics})
                    )
                    await parent.host.emit(host.progress(status))

    async def _continue_child(
        self, parent: Runtime, session_id: str, task: TaskEvent, paths: TaskPaths, host: ChildHost
    ) -> tuple[str, NetChange]:
        sid = task.child_session_id
        config = parent.engine.config
        engine = await asyncio.to_thread(Engine.open, paths.work, paths.store, session_id=sid, config=config)
        try:
            tools = allowed_tools(TaskInput(description=task.description, prompt="-", tools=task.tools))
            rt = Runtime(
                EngineGate(engine),
                host,
                parent.settings,
                parent.policy.for_child(session_id, sid),
                ReplayBuffer(),
                parent.client_of,
                tools=tools,
            )
            events = await rt.gate.call(lambda: list(engine.events(sid)))
            conv = Conversation.from_events(sid, events)
            await finish_interrupted(rt, conv)
            turn_id = new_id("turn")
            await journal(rt, conv, TurnEvent(turn_id=turn_id, text=RESUME_PROMPT, created_at=now_iso()))
            try:
                stop = await self._run_turn(rt, conv, turn_id, [{"type": "text", "text": RESUME_PROMPT}])
            except asyncio.CancelledError:
                await close_open_batch(rt, conv, turn_id, f"{NOT_RUN_STOPPED} ({CANCELLED})")
                raise
            return stop, await rt.gate.call(_net_since_start, engine)
        finally:
            await asyncio.to_thread(engine.close)

    async def close(self) -> None:
        """Cancel the resumes still running (server shutdown)."""
        for job in self._resuming.values():
            job.cancel()
        for job in list(self._resuming.values()):
            with contextlib.suppress(BaseException):
                await job

    async def discard(self, session_id: str, task_id: str) -> None:
        task, paths = await self._find(session_id, task_id)
        if task.status == "running":
            raise RetraceError(f"subagent {task_id} is still running; it cannot be discarded")
        await asyncio.to_thread(shutil.rmtree, paths.root, True)
        conv = await self._conversation(session_id)
        await journal(self._runtime(), conv, task.model_copy(update={"status": "discarded"}))
