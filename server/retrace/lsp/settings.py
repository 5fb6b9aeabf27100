"""Settings: validated from ``initializationOptions`` and pulled again on every change.

The client forwards ``workspace/didChangeConfiguration``; the server then pulls the ``retrace``
section with ``workspace/configuration`` (no restart: a running agent survives a settings
change). Agent settings take effect at once, then every registered feature's ``on_settings``
runs in the registry's order (:mod:`retrace.lsp.feature_lifecycle`: the remotes, the engines'
retention and capture rules in every open folder, the metrics); nothing needs a restart
(``restartRequired`` stays in the answer, empty, for clients that read it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pydantic import ValidationError

from retrace.camel import validation_message
from retrace.lsp.startup import agent_settings
from retrace.protocol.models import ServerSettings, SettingsUpdateResult

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)

SECTION = "retrace"


async def apply_settings(server: RetraceServer, settings: ServerSettings) -> SettingsUpdateResult:
    if server.startup is not None and not server.startup.done():
        # Settings pulled while the store is still opening must reach the agent built by it.
        with contextlib.suppress(Exception):
            await asyncio.shield(server.startup)
    previous = server.settings
    server.settings = settings
    services = server.services_if_ready()
    if services is not None:
        base_url = services.fake_model_url
        services.agent.update_settings(agent_settings(settings, base_url, trusted=server.trusted))
    await server.features.on_settings(previous, settings)
    return SettingsUpdateResult(applied=services is not None, restart_required=[])


def parse_settings(raw: Any) -> ServerSettings | None:
    """Validated settings, or ``None`` (logged, one line) when the section is unusable."""
    try:
        return ServerSettings.model_validate(raw or {})
    except ValidationError as exc:
        log.error("ignoring invalid settings: %s", validation_message(SECTION, exc))
        return None


async def pull_settings(server: RetraceServer) -> None:
    """Ask the client for the ``retrace`` section and apply it."""
    workspace = server.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        answer = await server.workspace_configuration_async(
            lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])
        )
    except Exception as exc:
        log.warning("could not read the client's settings: %s", exc)
        return
    settings = parse_settings(answer[0] if answer else None)
    if settings is not None:
        await apply_settings(server, settings)
