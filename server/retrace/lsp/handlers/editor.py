"""Handlers: ``retrace/editor/didChangeState`` (stored as plain JSON, stamped on checkpoints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.camel import dump
from retrace.protocol.models import EditorState

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def did_change_state(ls: RetraceServer, params: EditorState) -> None:
    ls.editor_state = dump(params)


HANDLERS: dict[str, Handler] = {"retrace/editor/didChangeState": did_change_state}
