"""Start and stop the per-workspace services behind the server.

On ``initialize`` the server starts :func:`start_services` in the background: the composition
root (:func:`retrace.bootstrap.open_services`) opens the engine and the agent, with a host that
talks to the client. Then the registered features start (``RetraceServer.features``, in the
registry's order: :mod:`retrace.lsp.feature_lifecycle`). The model SDK is not imported for it
(seconds of CPU before the first timeline answer): the catch-up walk and the features' background
work (the SDK's import among them) run once the first timeline answer is sent
(:func:`after_first_answer`). :func:`shutdown` stops the features, then closes the engines
(idempotent), releasing the store lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from retrace.agent.mcp.config import McpSettings
from retrace.agent.model.settings import ModelSettings
from retrace.agent.runtime import warm_sdk
from retrace.agent.settings import AgentSettings
from retrace.bootstrap import Services, open_services
from retrace.engine import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.store.adopt import adopt
from retrace.engine.store.home import default_store_dir
from retrace.lsp import editor_models, folder_remotes
from retrace.lsp.folder_remotes import remote_settings
from retrace.lsp.host import LspAgentHost
from retrace.lsp.services.remote import ServerRemote, notifier
from retrace.protocol.models import InitializationOptions, ServerSettings, TimelineDidChange

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)

__all__ = [
    "Services",
    "agent_settings",
    "engine_config",
    "remote_settings",
    "shutdown",
    "start_services",
    "stop_agent",
]

WARM_SDK_AFTER_S = 3.0
"""Seconds after the background work begins (:func:`after_first_answer`) before the model SDK is
imported (after the client's first requests, which it would slow: the import holds the
interpreter for seconds)."""
BACKGROUND_AFTER_S = 2.0
"""The longest start-up's background work waits for the first timeline answer (a client that
asks for none still gets its store checked)."""


def engine_config(settings: ServerSettings) -> EngineConfig:
    return EngineConfig(
        max_file_bytes=settings.max_file_bytes,
        excludes=list(settings.excludes),
        retention=settings.retention,
    )


def agent_settings(settings: ServerSettings, base_url: str | None, *, trusted: bool) -> AgentSettings:
    """The agent's settings from the client's; ``base_url``: the running offline model's, which
    beats the configured endpoint and provider (it was started because those are not meant). No MCP
    servers in an untrusted workspace (a stdio server is a command: it would run the folder's
    code); the client also takes ``retrace.mcp.servers`` from user settings only."""
    return AgentSettings(
        # The offline model answers as the Anthropic API, whatever provider is configured.
        model=settings.model.model_id() if base_url is None else ModelSettings().model_id(),
        access=settings.model if base_url is None else ModelSettings(),
        context_window=settings.model.context_window if base_url is None else None,
        max_tokens=settings.max_tokens,
        base_url=base_url or settings.base_url,
        permissions=settings.permissions,
        command_timeout_s=settings.command_timeout_seconds,
        auto_compact=settings.agent.auto_compact,
        compact_at=settings.agent.compact_at,
        mcp=settings.mcp if trusted else McpSettings(),
    )


def choose_store(workspace: Path, options: InitializationOptions) -> Path:
    """The store this server opens: the client's explicit ``storeDir``, else the folder's one
    store (the rule the command line and the agents' hooks follow), after adopting the store an
    older extension kept elsewhere (``legacyStoreDir``)."""
    if options.store_dir:
        return Path(options.store_dir).expanduser().absolute()
    if options.legacy_store_dir:
        try:
            return adopt(workspace, Path(options.legacy_store_dir)).store
        except (OSError, ValueError) as exc:  # never keep the folder from opening for the old store
            log.warning("store: the old store %s was not adopted: %s", options.legacy_store_dir, exc)
    return default_store_dir(workspace)


async def start_services(server: RetraceServer, workspace: Path, options: InitializationOptions) -> Services:
    settings = options.settings
    store = await asyncio.to_thread(choose_store, workspace, options)
    log.info("opening workspace %s (store: %s)", workspace, store)
    loop = asyncio.get_running_loop()
    remote = server.remote = await asyncio.to_thread(
        ServerRemote.prepare,
        store,
        workspace,
        remote_settings(server, settings),
        notifier(lambda view: server.send_notification("retrace/remote/progress", view), loop),
        lambda change: server.send_notification("retrace/timeline/didChange", change),
        identity=folder_remotes.first_identity(server, settings),
    )
    services = await open_services(
        workspace,
        store,
        LspAgentHost(server),
        agent_settings(settings, None, trusted=server.trusted),
        config=engine_config(settings),
        blob_source=remote.blob_source(),
        defer_catch_up=True,
        editor_models=editor_models.of(server),
    )
    engine = services.engine
    log.info("workspace ready: head %s, %d session(s)", engine.head.id, len(engine.sessions()))
    await server.features.start(services)
    task = loop.create_task(after_first_answer(server, services))
    _background.add(task)
    task.add_done_callback(_background.discard)
    return services


_background: set[asyncio.Task[None]] = set()
"""Start-ups waiting for their first answer (a reference keeps each task alive until it ends)."""


async def after_first_answer(server: RetraceServer, services: Services) -> None:
    """Start-up's background work — the catch-up walk (changes made while no engine watched), then
    the features' (the store's quick check, the storage measure, the model SDK's import, the
    automatic cleanup…) — begun once the first timeline answer is sent (at most
    :data:`BACKGROUND_AFTER_S` after the services are ready): before that answer they would take
    the interpreter from the request the user is waiting for. Whatever needs the catch-up before
    then (a checkpoint, a restore) runs it first (the engine's rule, :mod:`retrace.engine.catch_up`)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.first_answer.wait(), BACKGROUND_AFTER_S)
    await catch_up(server, services)
    await server.features.after_first_answer(services)


def warm_sdk_later() -> None:
    """Import the model SDK on a daemon thread, :data:`WARM_SDK_AFTER_S` from now (the start-up
    chore ``warm_sdk``, :mod:`retrace.lsp.features.housekeeping`)."""
    warm = threading.Timer(WARM_SDK_AFTER_S, warm_sdk)
    warm.daemon = True
    warm.start()


async def catch_up(server: RetraceServer, services: Services) -> None:
    """Run the open's pending catch-up through the gate; its ``external`` checkpoint (changes made
    while closed) reaches the timeline like any new checkpoint. A failure (a full disk) is logged
    and stays pending: the next checkpoint or restore runs it again, and reports it."""
    from retrace.lsp.services import timeline  # it imports the agent: loaded on use

    def run(engine: Engine) -> TimelineDidChange | None:
        if not engine.catch_up_pending:
            return None
        cp = engine.catch_up()
        if cp is None:
            return None
        return timeline.change_of(services, engine, cp) or TimelineDidChange(head=engine.head.id)

    try:
        change = await services.run(run)
    except (RetraceError, OSError) as exc:
        log.warning("catch-up after start-up failed (it runs again before the next change): %s", exc)
        return
    if change is not None:
        log.info("changes made while Retrace was closed: checkpoint %s", change.head)
        server.send_notification("retrace/timeline/didChange", change)


async def stop_agent(services: Services) -> None:
    """Cancel running turns (their commands' process groups are killed), subagent resumes, and
    stop the background commands."""
    await services.agent.tasks.close()
    for session_id in await services.run(lambda e: e.sessions()):
        if services.agent.running(session_id):
            await services.agent.cancel(session_id)
    await services.agent.background.stop_all(by="shutdown")
    await services.agent.mcp.close()


def close_other_folders(server: RetraceServer) -> None:
    """Release the further folders' stores still open (their features first); idempotent."""
    features = list(server.folder_features.values())
    server.folder_features.clear()
    for folder in features:
        folder.stop(0.0)
    tasks = list(server.folder_services.values())
    server.folder_services.clear()
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is None:
            try:
                task.result().close()
            except Exception:
                log.exception("closing a workspace folder's engine failed")


def shutdown(server: RetraceServer) -> None:
    """Stop the features, then close the services if they were started (safe to call more than
    once). The features first: no relayed call or push reaches an engine that let go."""
    server.features.stop(0.0)
    close_other_folders(server)
    services = server.services_if_ready()
    if services is None:
        return
    try:
        services.close()
    except Exception:
        log.exception("closing the engine failed")
