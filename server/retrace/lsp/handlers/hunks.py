"""Handlers: ``retrace/restore/hunks`` and ``retrace/restore/hunk`` (per-hunk review and restore)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.services.restore_hunk import HunkRestoreService
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.hunks import HunksParams, HunksResult, RestoreHunkParams, RestoreHunkResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def list_hunks(ls: RetraceServer, params: HunksParams) -> HunksResult:
    return await HunkRestoreService(ls, await ls.services()).hunks(params)


async def restore_hunk(ls: RetraceServer, params: RestoreHunkParams) -> RestoreHunkResult:
    require_trusted(ls, "Restoring a hunk")
    return await HunkRestoreService(ls, await ls.services()).restore(params)


HANDLERS: dict[str, Handler] = {
    "retrace/restore/hunks": list_hunks,
    "retrace/restore/hunk": restore_hunk,
}
