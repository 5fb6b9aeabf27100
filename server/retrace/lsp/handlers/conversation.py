"""Handlers: ``retrace/conversation/*``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.engine.models import Checkpoint
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.models import (
    ConversationGetParams,
    ConversationView,
    SummarizeParams,
    TimelineDidChange,
)

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def get(ls: RetraceServer, params: ConversationGetParams) -> ConversationView:
    services = await ls.services()
    return await services.agent.conversation(params.session_id, params.limit)


async def summarize(ls: RetraceServer, params: SummarizeParams) -> Checkpoint:
    require_trusted(ls, "Summarizing a conversation")
    services = await ls.services()
    services.require_model(ls.settings.base_url, ls.settings.model)
    checkpoint = await services.agent.summarize(params.id, params.direction)
    ls.send_notification(
        "retrace/timeline/didChange", TimelineDidChange(head=checkpoint.id, checkpoint=checkpoint)
    )
    return checkpoint


HANDLERS: dict[str, Handler] = {
    "retrace/conversation/get": get,
    "retrace/conversation/summarize": summarize,
}
