"""Handlers: ``retrace/stats``, ``retrace/store/verify``, ``retrace/settings/update`` and
``retrace/server/state``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.services import store_health, timeline
from retrace.lsp.settings import apply_settings
from retrace.protocol.models import (
    EmptyParams,
    ServerStateResult,
    SettingsUpdateParams,
    SettingsUpdateResult,
    StatsResult,
    StoreVerifyParams,
    StoreVerifyResult,
)

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def stats(ls: RetraceServer, params: EmptyParams) -> StatsResult:
    return await timeline.stats(await ls.services())


async def store_verify(ls: RetraceServer, params: StoreVerifyParams) -> StoreVerifyResult:
    services = await ls.services()
    return StoreVerifyResult(report=await store_health.verify(services.engine.store_dir, quick=params.quick))


async def server_state(ls: RetraceServer, params: EmptyParams) -> ServerStateResult:
    services = await ls.services()
    return ServerStateResult(
        model_mode=services.model_mode(ls.settings.base_url),
        trusted=ls.trusted,
        store_dir=str(services.engine.store_dir),
    )


async def settings_update(ls: RetraceServer, params: SettingsUpdateParams) -> SettingsUpdateResult:
    return await apply_settings(ls, params.settings)


HANDLERS: dict[str, Handler] = {
    "retrace/stats": stats,
    "retrace/settings/update": settings_update,
    "retrace/server/state": server_state,
    "retrace/store/verify": store_verify,
}
