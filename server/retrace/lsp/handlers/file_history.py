"""Handler: ``retrace/file/history`` (one call of the application service through the engine gate)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.app.file_history import file_history
from retrace.protocol.file_history import FileHistoryParams, FileHistoryResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def history(ls: RetraceServer, params: FileHistoryParams) -> FileHistoryResult:
    services = await ls.services()
    return await services.run(lambda engine: file_history(engine, params))


HANDLERS: dict[str, Handler] = {"retrace/file/history": history}
