"""Handlers: ``retrace/agent/*``, ``retrace/background/*``, ``retrace/session/list``,
``retrace/toolCalls/search``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.services import timeline
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.models import (
    BackgroundListParams,
    BackgroundListResult,
    BackgroundStopParams,
    BackgroundStopResult,
    CancelParams,
    CancelResult,
    EmptyParams,
    PromptParams,
    PromptResult,
    SessionListResult,
    ToolCallSearchParams,
    ToolCallSearchResult,
)

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def prompt(ls: RetraceServer, params: PromptParams) -> PromptResult:
    require_trusted(ls, "An agent turn")
    services = await ls.services()
    services.require_model(ls.settings.base_url, ls.settings.model)
    session_id, turn_id = await services.agent.prompt(
        params.text,
        session_id=params.session_id,
        context=params.context,
        mentions=params.mentions,
        retry_of=params.retry_of,
    )
    return PromptResult(session_id=session_id, turn_id=turn_id)


async def cancel(ls: RetraceServer, params: CancelParams) -> CancelResult:
    services = await ls.services()
    return CancelResult(cancelled=bool(await services.agent.cancel(params.session_id)))


async def background_list(ls: RetraceServer, params: BackgroundListParams) -> BackgroundListResult:
    tasks = (await ls.services()).agent.background
    views = tasks.views(params.session_id, running_only=not params.include_ended)
    return BackgroundListResult(tasks=views)


async def background_stop(ls: RetraceServer, params: BackgroundStopParams) -> BackgroundStopResult:
    task = await (await ls.services()).agent.background.stop(params.handle)
    return BackgroundStopResult(task=task.view())


async def session_list(ls: RetraceServer, params: EmptyParams) -> SessionListResult:
    return SessionListResult(sessions=await timeline.sessions(await ls.services()))


async def tool_calls_search(ls: RetraceServer, params: ToolCallSearchParams) -> ToolCallSearchResult:
    services = await ls.services()
    records = await services.agent.search_all_tool_calls(
        tool=params.tool, input_contains=params.input_contains
    )
    return ToolCallSearchResult.model_validate({"records": records})


HANDLERS: dict[str, Handler] = {
    "retrace/agent/prompt": prompt,
    "retrace/agent/cancel": cancel,
    "retrace/background/list": background_list,
    "retrace/background/stop": background_stop,
    "retrace/session/list": session_list,
    "retrace/toolCalls/search": tool_calls_search,
}
