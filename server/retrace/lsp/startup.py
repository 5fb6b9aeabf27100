"""Build and tear down the per-workspace services behind the server.

On ``initialize`` the server starts :func:`start_services` in the background: open the engine
(creating the store and its baseline on first use), start the offline fake model when the
environment asks for it (``retrace.fakemodel.start_for_env``), build the agent with a host that
talks to the client, and reload its sessions from the journals (crash resume). :func:`shutdown`
closes everything (idempotent), releasing the store lock.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from retrace import fakemodel
from retrace.agent.loop import EngineGate
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine, EngineConfig
from retrace.lsp.host import LspAgentHost
from retrace.lsp.services import store_health
from retrace.protocol.models import InitializationOptions, ServerSettings

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class Services:
    """Everything that serves one workspace."""

    workspace: Path
    engine: Engine
    gate: EngineGate
    agent: AgentService
    fake_model_url: str | None = None
    """Base URL of the in-process fake Messages API (offline demo), when it was started."""
    closed: bool = field(default=False)

    async def run(self, call: Callable[[Engine], T]) -> T:
        """``call(engine)`` in a worker thread, serialised with the agent's engine calls."""
        return await self.gate.call(call, self.engine)


def engine_config(settings: ServerSettings) -> EngineConfig:
    return EngineConfig(
        max_file_bytes=settings.max_file_bytes,
        excludes=list(settings.excludes),
        retention=settings.retention,
    )


def agent_settings(settings: ServerSettings, base_url: str | None) -> AgentSettings:
    return AgentSettings(
        model=settings.model,
        max_tokens=settings.max_tokens,
        base_url=base_url or settings.base_url,
        permissions=settings.permissions,
        command_timeout_s=settings.command_timeout_seconds,
    )


async def start_services(server: RetraceServer, workspace: Path, options: InitializationOptions) -> Services:
    settings = options.settings
    store = Path(options.store_dir) if options.store_dir else None
    log.info("opening workspace %s (store: %s)", workspace, store or "default")
    engine = await asyncio.to_thread(Engine.open, workspace, store, config=engine_config(settings))
    try:
        for line in engine.recovered:
            log.warning("%s", line)
        # A configured endpoint (retrace.baseUrl) beats the offline fake, unless one is forced.
        forced = bool(os.environ.get("RETRACE_FAKE_MODEL"))
        base_url = fakemodel.start_for_env() if forced or settings.base_url is None else None
        if base_url is not None:
            log.info("offline mode: fake Messages API at %s", base_url)
        agent = AgentService(engine, LspAgentHost(server), agent_settings(settings, base_url))
        interrupted = await agent.load()
        if interrupted:
            log.warning("resumed after a crash: interrupted tool calls in %s", ", ".join(interrupted))
    except BaseException:
        engine.close()
        raise
    log.info("workspace ready: head %s, %d session(s)", engine.head.id, len(engine.sessions()))
    store_health.start_background_check(server, engine.store_dir)
    return Services(workspace=workspace, engine=engine, gate=agent.gate, agent=agent, fake_model_url=base_url)


async def stop_agent(services: Services) -> None:
    """Cancel running turns (their commands' process groups are killed)."""
    for session_id in await services.run(lambda e: e.sessions()):
        if services.agent.running(session_id):
            await services.agent.cancel(session_id)


def shutdown(server: RetraceServer) -> None:
    """Close the services if they were started (safe to call more than once)."""
    services = server.services_if_ready()
    if services is None or services.closed:
        return
    services.closed = True
    try:
        services.engine.close()
    except Exception:
        log.exception("closing the engine failed")
