"""Start-up's chores, each a feature with only ``after_first_answer`` (they would take the
interpreter from the first answer the user waits for):

* :class:`HookRefreshFeature` — another agent's hooks an earlier Retrace wrote point at an
  interpreter an update removed: point them at this one (never in an untrusted workspace);
* :class:`StoreCheckFeature` — the store's quick check, in a thread
  (:func:`retrace.lsp.services.store_health.start_background_check`);
* :class:`WarmSdkFeature` — the model SDK's import, a few seconds later
  (:func:`retrace.lsp.startup.warm_sdk_later`);
* :class:`AutoCleanupFeature` — the automatic cleanup: once if due, then the idle watch
  (:func:`retrace.lsp.services.auto_gc.start`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from retrace.engine.errors import RetraceError
from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.services import auto_gc, store_health
from retrace.lsp.startup import warm_sdk_later

if TYPE_CHECKING:
    from pathlib import Path

    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


async def refresh_integrations(server: RetraceServer, workspace: Path) -> None:
    """Another agent's hooks written by an earlier Retrace run an interpreter an update removed:
    point them at this one (``app.hooks.settings_file.refresh``: never creates a settings file,
    leaves entries that run another live interpreter). Log only; never in an untrusted workspace."""
    if not server.trusted:
        return
    from retrace.app.hooks.settings_file import refresh  # loaded on use, after the first answer

    try:
        results, problems = await asyncio.to_thread(refresh, workspace)
    except (RetraceError, OSError) as exc:
        log.warning("could not look at other agents' hook settings: %s", exc)
        return
    for result in results:
        if result.action != "unchanged":
            log.info("%s hooks %s in %s (this interpreter)", result.title, result.action, result.file)
    for problem in problems:
        log.warning("other agent's hook settings left as they are: %s", problem)


class HookRefreshFeature(Feature):
    name = "integrations"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def after_first_answer(self, services: Services) -> None:
        await refresh_integrations(self.server, services.workspace)


class StoreCheckFeature(Feature):
    name = "store_health"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def after_first_answer(self, services: Services) -> None:
        store_health.start_background_check(self.server, services.engine.store_dir)


class WarmSdkFeature(Feature):
    name = "warm_sdk"

    async def after_first_answer(self, services: Services) -> None:
        warm_sdk_later()


class AutoCleanupFeature(Feature):
    name = "auto_gc"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def after_first_answer(self, services: Services) -> None:
        await auto_gc.start(self.server, services)
