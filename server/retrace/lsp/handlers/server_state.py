"""Handlers: ``retrace/server/state`` (model mode, trust, store) and ``retrace/settings/update``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.settings import apply_settings
from retrace.protocol.models import EmptyParams, ServerStateResult, SettingsUpdateParams, SettingsUpdateResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def server_state(ls: RetraceServer, params: EmptyParams) -> ServerStateResult:
    services = await ls.services()
    return ServerStateResult(
        model_mode=services.model_mode(ls.settings.base_url, ls.settings.model),
        trusted=ls.trusted,
        store_dir=str(services.engine.store_dir),
    )


async def settings_update(ls: RetraceServer, params: SettingsUpdateParams) -> SettingsUpdateResult:
    return await apply_settings(ls, params.settings)


HANDLERS: dict[str, Handler] = {
    "retrace/settings/update": settings_update,
    "retrace/server/state": server_state,
}
