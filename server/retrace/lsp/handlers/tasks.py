"""Handlers: ``retrace/tasks/*`` (a session's subagents: list, timeline, apply, discard)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.subagents.service import RESUMABLE
from retrace.engine.store.events import TaskEvent
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.tasks import (
    TaskApplyResult,
    TaskDiscardResult,
    TaskParams,
    TaskResumeResult,
    TasksListParams,
    TasksListResult,
    TaskTimelineResult,
    TaskView,
)

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def tasks_list(ls: RetraceServer, params: TasksListParams) -> TasksListResult:
    services = await ls.services()
    children = await services.agent.tasks.children(params.session_id)
    return TasksListResult(tasks=[view(t) for t in children])


def view(task: TaskEvent) -> TaskView:
    return TaskView.model_validate(
        {
            "task_id": task.task_id,
            "tool_call_id": task.call_id,
            "description": task.description,
            "status": task.status,
            "child_session_id": task.child_session_id,
            "base": task.base,
            "turn_id": task.turn_id,
            "merged": task.merged,
            "conflicts": task.conflicts,
            "metrics": task.metrics,
            "resumable": task.status in RESUMABLE,
        }
    )


async def task_timeline(ls: RetraceServer, params: TaskParams) -> TaskTimelineResult:
    services = await ls.services()
    return TaskTimelineResult(
        checkpoints=await services.agent.tasks.timeline(params.session_id, params.task_id)
    )


async def task_apply(ls: RetraceServer, params: TaskParams) -> TaskApplyResult:
    require_trusted(ls, "Applying a subagent's result")
    services = await ls.services()
    applied = await services.agent.tasks.apply(params.session_id, params.task_id)
    return TaskApplyResult.model_validate(
        {"checkpoint": applied.checkpoint, "written": applied.written, "conflicts": applied.conflicts}
    )


async def task_resume(ls: RetraceServer, params: TaskParams) -> TaskResumeResult:
    require_trusted(ls, "Resuming a subagent")
    services = await ls.services()
    services.require_model(ls.settings.base_url, ls.settings.model)
    await services.agent.tasks.resume(params.session_id, params.task_id)
    return TaskResumeResult(started=True)


async def task_discard(ls: RetraceServer, params: TaskParams) -> TaskDiscardResult:
    require_trusted(ls, "Discarding a subagent")
    services = await ls.services()
    await services.agent.tasks.discard(params.session_id, params.task_id)
    return TaskDiscardResult(discarded=True)


HANDLERS: dict[str, Handler] = {
    "retrace/tasks/list": tasks_list,
    "retrace/tasks/timeline": task_timeline,
    "retrace/tasks/apply": task_apply,
    "retrace/tasks/discard": task_discard,
    "retrace/tasks/resume": task_resume,
}
