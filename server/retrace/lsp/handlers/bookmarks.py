"""Handlers: ``retrace/bookmark/create`` and ``retrace/bookmark/name`` (named checkpoints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.host import LspAgentHost
from retrace.lsp.services import bookmarks
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.bookmarks import (
    BookmarkCreateParams,
    BookmarkCreateResult,
    BookmarkNameParams,
    BookmarkNameResult,
)

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def create(ls: RetraceServer, params: BookmarkCreateParams) -> BookmarkCreateResult:
    require_trusted(ls, "Bookmarking the current state")
    return await bookmarks.create(LspAgentHost(ls).emit, await ls.services(), params)


async def name(ls: RetraceServer, params: BookmarkNameParams) -> BookmarkNameResult:
    require_trusted(ls, "Naming a checkpoint")
    return await bookmarks.name(await ls.services(), params)


HANDLERS: dict[str, Handler] = {
    "retrace/bookmark/create": create,
    "retrace/bookmark/name": name,
}
