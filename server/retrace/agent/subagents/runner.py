"""The ``task`` calls of one model reply: children started together, merged in call order.

The agent loop hands every ``task`` call of a reply to one :class:`Subagents` before running
any of them (:meth:`Subagents.start`), so the children work in parallel (at most
``AgentSettings.max_parallel_tasks`` at once, the rest queued). Then each call is run in order
(:meth:`Subagents.run`, the tool's body): it waits for its child and merges the child's net
change into the parent's workspace, which the ordinary tool-call path then records as that
call's checkpoint. Every child of a reply starts from the same parent checkpoint; a later
child's merge meets the earlier ones' changes as "ours", so overlapping edits are merged or
reported as conflicts, never silently dropped. A child that fails, stops early or is cancelled
changes nothing in the parent's workspace; its own timeline is kept.

Each start and end is journaled in the parent session (``task`` events: the topology a restart
rebuilds). A cancelled turn cancels every child it started (:meth:`Subagents.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from retrace.agent.conversation import Conversation, new_id
from retrace.agent.runtime import Runtime, journal
from retrace.agent.subagents.apply import MergeOutcome, conflict_list, merge_into
from retrace.agent.subagents.child import ChildHost, ChildOutcome, TurnRunner, run_child
from retrace.agent.subagents.isolation import materialise
from retrace.agent.subagents.layout import TaskPaths
from retrace.agent.tools.base import ToolContext, ToolResult
from retrace.agent.tools.task import TaskInput
from retrace.engine.store.events import TaskEvent

MERGED_STOP = "end_turn"
"""Only a child that finished its turn normally is merged; any other stop keeps its work in its
own timeline (the user can look at it and apply it)."""


def _peak_rss_mib() -> float:
    """The server process's peak resident memory (children run inside it, so they share it);
    0 where the platform does not say (Windows has no ``resource`` module)."""
    try:
        import resource  # POSIX only
    except ImportError:
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


class _Child:
    def __init__(
        self, args: TaskInput, paths: TaskPaths, host: ChildHost, base: str, session_id: str
    ) -> None:
        self.args = args
        self.paths = paths
        self.host = host
        self.base = base
        self.session_id = session_id
        self.task: asyncio.Task[ChildOutcome] | None = None
        self.missing: list[str] = []
        """Paths its copy lacks (their content was not stored intact)."""


class Subagents:
    """The :class:`~retrace.agent.tools.base.TaskRunner` of one reply's tool calls."""

    def __init__(self, rt: Runtime, conv: Conversation, turn_id: str, run_turn: TurnRunner) -> None:
        self.rt = rt
        self.conv = conv
        self.turn_id = turn_id
        self.run_turn = run_turn
        self._children: dict[str, _Child] = {}
        self._slots = asyncio.Semaphore(rt.settings.max_parallel_tasks)
        self._running = 0
        self.peak_parallel = 0

    async def start(self, call_id: str, args: TaskInput) -> None:
        """Journal the child and start it (it waits for a free slot); idempotent."""
        if call_id in self._children:
            return
        rt = self.rt
        task_id = new_id("task")
        paths = TaskPaths(rt.engine.store_dir, task_id)
        base = (await rt.gate.call(lambda: rt.engine.head)).id
        host = ChildHost(rt.host, self.conv.session_id, task_id, call_id, args.description)
        child = _Child(args, paths, host, base, new_id("ses"))
        await self._journal(call_id, child, "running")
        self._children[call_id] = child
        child.task = asyncio.create_task(self._work(child), name=f"retrace-{task_id}")

    async def _work(self, child: _Child) -> ChildOutcome:
        async with self._slots:
            self._running += 1
            self.peak_parallel = max(self.peak_parallel, self._running)
            try:
                engine = self.rt.engine
                manifest = await self.rt.gate.call(engine.manifest, child.base)
                copy = await asyncio.to_thread(materialise, engine.blobs, manifest, child.paths.work)
                child.missing = copy.missing
                await self.rt.host.emit(child.host.progress())
                return await run_child(
                    self.rt,
                    paths=child.paths,
                    args=child.args,
                    host=child.host,
                    parent_session=self.conv.session_id,
                    run_turn=self.run_turn,
                    session_id=child.session_id,
                )
            finally:
                self._running -= 1

    async def run(self, call_id: str, args: Any) -> ToolResult:
        await self.start(call_id, args)
        child = self._children[call_id]
        assert child.task is not None
        try:
            outcome = await child.task
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self._end(call_id, child, "cancelled")
            raise
        except Exception as e:  # the child could not run at all (copy failed, store error, a bug)
            await self._end(call_id, child, "failed")
            return ToolResult(
                f"the subagent {child.args.description!r} could not run: {e}; nothing was changed here",
                is_error=True,
                meta=self._meta(child, "failed"),
            )
        if outcome.stop_reason != MERGED_STOP:
            await self._end(call_id, child, "failed", outcome=outcome)
            return ToolResult(
                self._report(child, outcome, None, "failed"), is_error=True, meta=self._meta(child, "failed")
            )
        ctx = ToolContext(
            workspace=self.rt.engine.workspace,
            engine_config=self.rt.engine.config,
            dirty_paths=frozenset(self.rt.host.dirty_paths()),
            folders=self.rt.workspace_folders(),
        )
        merged = await self.rt.gate.call(merge_into, ctx, outcome.change)
        status = "conflicts" if merged.conflicts else "merged"
        await self._end(call_id, child, status, outcome=outcome, merged=merged)
        return ToolResult(
            self._report(child, outcome, merged, status),
            changed_paths=merged.written,
            meta=self._meta(child, status, merged),
        )

    async def close(self) -> None:
        """Cancel every child still working (the turn ended before their calls ran)."""
        pending = [c.task for c in self._children.values() if c.task is not None and not c.task.done()]
        for task in pending:
            task.cancel()
        for call_id, child in self._children.items():
            if child.task in pending:
                with contextlib.suppress(BaseException):
                    await child.task
                with contextlib.suppress(Exception):
                    await self._end(call_id, child, "cancelled")

    # ------------------------------------------------------------------ journal and report
    async def _journal(self, call_id: str, child: _Child, status: Any, **fields: Any) -> None:
        event = TaskEvent(
            task_id=child.host.task_id,
            call_id=call_id,
            status=status,
            description=child.args.description,
            store=child.paths.store_rel,
            child_session_id=child.session_id,
            base=child.base,
            turn_id=self.turn_id,
            tools=child.args.tools,
            **fields,
        )
        await journal(self.rt, self.conv, event)

    async def _end(
        self,
        call_id: str,
        child: _Child,
        status: Any,
        *,
        outcome: ChildOutcome | None = None,
        merged: MergeOutcome | None = None,
    ) -> None:
        metrics: dict[str, Any] = {"parallel": self.peak_parallel, "serverPeakRssMiB": _peak_rss_mib()}
        if outcome is not None:
            metrics |= {
                "toolCalls": outcome.tool_calls,
                "checkpoints": outcome.checkpoints,
                "durationMs": round(outcome.duration_ms, 1),
                "stopReason": outcome.stop_reason,
            }
        conflicts = conflict_list(merged)
        metrics["conflicts"] = len(conflicts)
        await self._journal(
            call_id,
            child,
            status,
            merged=merged.written if merged else [],
            conflicts=conflicts,
            metrics=metrics,
        )
        await self.rt.host.emit(child.host.progress(status))

    def _meta(self, child: _Child, status: str, merged: MergeOutcome | None = None) -> dict[str, Any]:
        conflicts = conflict_list(merged)
        return {
            "task": {
                "id": child.host.task_id,
                "description": child.args.description,
                "store": child.paths.store_rel,
                "sessionId": child.session_id,
                "status": status,
                "conflicts": conflicts,
            }
        }

    def _report(self, child: _Child, outcome: ChildOutcome, merged: MergeOutcome | None, status: str) -> str:
        name = child.args.description
        lines = [f"subagent {name!r} ({child.host.task_id}) stopped: {outcome.stop_reason}"]
        if status == "failed":
            lines.append("nothing was merged into this workspace; its work is kept in its own timeline")
        elif merged is not None:
            if merged.written:
                both = set(merged.merged)
                listed = ", ".join(
                    p + (" (merged with changes made here)" if p in both else "") for p in merged.written
                )
                lines.append(f"merged into this workspace: {listed}")
            else:
                lines.append("it changed no files")
            for conflict in merged.conflicts:
                lines.append(f"CONFLICT, not merged: {conflict.path}: {conflict.reason}")
        if child.missing:
            shown = ", ".join(child.missing[:20]) + (" ..." if len(child.missing) > 20 else "")
            lines.append(f"not in its copy of the workspace (content not stored): {shown}")
        lines += ["--- its final answer ---", outcome.answer]
        return "\n".join(lines)
