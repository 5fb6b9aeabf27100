"""Handler: ``retrace/workspace/files`` (one call of the application service through the engine gate)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.app.workspace_files import workspace_files
from retrace.protocol.workspace_files import WorkspaceFilesParams, WorkspaceFilesResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def files(ls: RetraceServer, params: WorkspaceFilesParams) -> WorkspaceFilesResult:
    services = await ls.services()
    return await services.run(lambda engine: workspace_files(engine, params))


HANDLERS: dict[str, Handler] = {"retrace/workspace/files": files}
