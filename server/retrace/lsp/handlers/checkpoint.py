"""Handlers: ``retrace/timeline/get``, ``retrace/timeline/tree`` and ``retrace/checkpoint/*``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.folders import FolderNotServed
from retrace.lsp.rpc import FOLDER
from retrace.lsp.services import timeline
from retrace.lsp.services.restore import RestoreService
from retrace.lsp.services.restore_prompt import restore_to_prompt
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.models import (
    CheckpointDetail,
    CheckpointGetParams,
    DiffParams,
    DiffResult,
    FileContentParams,
    FileContentResult,
    RestoreParams,
    RestoreResult,
    TimelineGetParams,
    TimelineGetResult,
    TimelineTreeParams,
    TimelineTreeResult,
    UndoLastRestoreParams,
)
from retrace.protocol.prompt_restore import RestoreToPromptParams, RestoreToPromptResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def timeline_get(ls: RetraceServer, params: TimelineGetParams) -> TimelineGetResult:
    return await timeline.timeline(await ls.services(), params.session_id)


async def timeline_tree(ls: RetraceServer, params: TimelineTreeParams) -> TimelineTreeResult:
    try:
        return await timeline.tree(await ls.services(), params)
    finally:
        ls.first_answer.set()  # start-up's background work may begin (retrace.lsp.startup)


async def checkpoint_get(ls: RetraceServer, params: CheckpointGetParams) -> CheckpointDetail:
    return await timeline.checkpoint_detail(await ls.services(), params.id, params.task)


async def file_content(ls: RetraceServer, params: FileContentParams) -> FileContentResult:
    return await timeline.file_content(await ls.services(), params)


async def diff(ls: RetraceServer, params: DiffParams) -> DiffResult:
    return await timeline.diff(await ls.services(), params)


async def restore(ls: RetraceServer, params: RestoreParams) -> RestoreResult:
    require_trusted(ls, "Restoring a checkpoint")
    if FOLDER.get() is not None and params.mode != "code":
        raise FolderNotServed(
            "another folder than the first restores code only: the conversation is the first folder's"
        )
    return await RestoreService(ls, await ls.services()).restore(params)


async def undo_last_restore(ls: RetraceServer, params: UndoLastRestoreParams) -> RestoreResult:
    require_trusted(ls, "Undoing a restore")
    return await RestoreService(ls, await ls.services()).undo_last(
        params.background_tasks, params.while_agent_runs, params.git_choice
    )


async def restore_to_prompt_handler(
    ls: RetraceServer, params: RestoreToPromptParams
) -> RestoreToPromptResult:
    require_trusted(ls, "Restoring to a prompt")
    return await restore_to_prompt(RestoreService(ls, await ls.services()), params)


HANDLERS: dict[str, Handler] = {
    "retrace/timeline/get": timeline_get,
    "retrace/timeline/tree": timeline_tree,
    "retrace/checkpoint/get": checkpoint_get,
    "retrace/checkpoint/fileContent": file_content,
    "retrace/checkpoint/diff": diff,
    "retrace/checkpoint/restore": restore,
    "retrace/restore/undoLast": undo_last_restore,
    "retrace/restore/toPrompt": restore_to_prompt_handler,
}
