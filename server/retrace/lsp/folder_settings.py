"""Settings that reach every open folder of the workspace, and each further folder's automatic
cleanup.

THE place a settings change reaches the engines: :func:`apply_to_engines` gives every open
folder's engine (the first and every further one) the new ``retrace.retention.*`` at once
(``Engine.config``: what collection, automatic or explicit, applies) and, when it changed, looks
whether a cleanup is now due in each (:func:`retrace.lsp.services.auto_gc.cleanup_if_due`: never
while a turn runs or a restore is between its steps). The settings that shape what is captured
(``excludes``, ``maxFileBytes``) reach every open folder at once too
(:meth:`retrace.engine.capture.capturer.Capturer.set_rules`, in the engine's gate): the next
capture of each folder walks its tree under the new rules, so what they change (a newly excluded
file leaving the record, a file now under the cap stored) is recorded by that capture — an
``external`` change before the agent's next call, as a changed ``.gitignore`` is — never
attributed to the agent. A folder opened later is opened with the settings current then
(``RetraceServer.settings``).

Every further folder gets the automatic cleanup the first folder has (:func:`start_cleanup`: one
at open if due, then after each ``retention.idleMinutes`` without a turn), stopped with the folder
(the folder's ``auto_gc`` feature cancels it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from retrace.engine.errors import RetraceError
from retrace.lsp.rpc import FOLDER
from retrace.lsp.services import auto_gc

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.lsp.server import RetraceServer
    from retrace.protocol.models import ServerSettings

log = logging.getLogger(__name__)

_pending: set[asyncio.Task[object]] = set()


def open_folders(server: RetraceServer) -> list[tuple[str | None, Services]]:
    """Every open folder's services: ``(None, first)`` then ``(root, services)`` of the others."""
    out: list[tuple[str | None, Services]] = []
    first = server.startup
    if first is not None and first.done() and not first.cancelled() and first.exception() is None:
        out.append((None, first.result()))
    for root, task in list(server.folder_services.items()):
        if task.done() and not task.cancelled() and task.exception() is None:
            out.append((root, task.result()))
    return out


def _rules(settings: ServerSettings) -> tuple[list[str], int]:
    return list(settings.excludes), settings.max_file_bytes


async def apply_capture_rules(
    server: RetraceServer, previous: ServerSettings, settings: ServerSettings
) -> int:
    """Give every open folder's engine the new excludes and size cap; returns how many got them."""
    if _rules(previous) == _rules(settings):
        return 0
    excludes, cap = _rules(settings)

    def apply(engine: Engine) -> None:
        engine.config = engine.config.model_copy(update={"excludes": excludes, "max_file_bytes": cap})
        if engine.capturer is not None:
            engine.capturer.set_rules(engine.config, engine.head_manifest)

    count = 0
    for root, services in open_folders(server):
        token = FOLDER.set(root)
        try:
            await services.run(apply)
            count += 1
        finally:
            FOLDER.reset(token)
    return count


async def apply_to_engines(server: RetraceServer, previous: ServerSettings, settings: ServerSettings) -> int:
    """Give every open folder's engine the new retention; returns how many engines got it."""
    await apply_capture_rules(server, previous, settings)
    if previous.retention == settings.retention:
        return 0
    policy = settings.retention

    def apply(engine: Engine) -> None:
        engine.config = engine.config.model_copy(update={"retention": policy})

    count = 0
    for root, services in open_folders(server):
        token = FOLDER.set(root)
        try:
            await services.run(apply)
            count += 1
            task: asyncio.Task[object] = asyncio.ensure_future(_cleanup(server, services, "settings"))
            _pending.add(task)
            task.add_done_callback(_pending.discard)
        finally:
            FOLDER.reset(token)
    return count


async def _cleanup(server: RetraceServer, services: Services, why: str) -> object:
    try:
        return await auto_gc.cleanup_if_due(server, services, why)
    except (RetraceError, OSError) as exc:
        log.info("automatic cleanup (%s) skipped: %s", why, exc)
        return None


async def _folder_cleanup(server: RetraceServer, services: Services) -> None:
    await _cleanup(server, services, "folder opened")
    await auto_gc.watch_idle(server, services)


def start_cleanup(server: RetraceServer, services: Services) -> asyncio.Task[None]:
    """The automatic cleanup of a further folder (call in its context: FOLDER set); cancelling the
    task stops it (its feature, :mod:`retrace.lsp.features.folder_features`, does on stop)."""
    return asyncio.ensure_future(_folder_cleanup(server, services))
