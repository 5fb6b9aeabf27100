"""Handlers: ``retrace/stats`` (the store's figures for the status bar) and ``retrace/store/verify``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.services import store_health, timeline
from retrace.protocol.models import EmptyParams, StatsResult, StoreVerifyParams, StoreVerifyResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def stats(ls: RetraceServer, params: EmptyParams) -> StatsResult:
    return await timeline.stats(await ls.services())


async def store_verify(ls: RetraceServer, params: StoreVerifyParams) -> StoreVerifyResult:
    services = await ls.services()
    return StoreVerifyResult(report=await store_health.verify(services.engine.store_dir, quick=params.quick))


HANDLERS: dict[str, Handler] = {
    "retrace/stats": stats,
    "retrace/store/verify": store_verify,
}
