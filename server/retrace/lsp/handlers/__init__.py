"""JSON-RPC handlers by area: each validates (done by ``rpc``), calls a service, returns a model.

``CLIENT_METHOD_HANDLERS`` maps every client → server method of the protocol to its handler;
``rpc.register`` refuses to start when one is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.handlers import (
    agent,
    bookmarks,
    checkpoint,
    conversation,
    editor,
    file_history,
    handoff,
    hunks,
    integrations,
    metrics,
    model,
    remote,
    server_state,
    store,
    tasks,
    workspace_files,
)
from retrace.lsp.handlers.lifecycle import register_lifecycle

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler

CLIENT_METHOD_HANDLERS: dict[str, Handler] = {
    **agent.HANDLERS,
    **bookmarks.HANDLERS,
    **checkpoint.HANDLERS,
    **conversation.HANDLERS,
    **editor.HANDLERS,
    **file_history.HANDLERS,
    **handoff.HANDLERS,
    **hunks.HANDLERS,
    **integrations.HANDLERS,
    **metrics.HANDLERS,
    **model.HANDLERS,
    **remote.HANDLERS,
    **server_state.HANDLERS,
    **store.HANDLERS,
    **tasks.HANDLERS,
    **workspace_files.HANDLERS,
}

__all__ = ["CLIENT_METHOD_HANDLERS", "register_lifecycle"]
