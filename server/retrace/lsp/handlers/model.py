"""Handlers: ``retrace/model/chatDelta`` (a piece of an editor model's streamed reply)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp import editor_models
from retrace.protocol.model_bridge import ModelChatDelta

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def chat_delta(ls: RetraceServer, params: ModelChatDelta) -> None:
    editor_models.of(ls).delta(params.request_id, params.text)


HANDLERS: dict[str, Handler] = {"retrace/model/chatDelta": chat_delta}
