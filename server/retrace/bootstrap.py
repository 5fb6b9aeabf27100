"""The composition root: builds the engine, its gate, the model client and the agent service, once.

Everything that serves a workspace — the JSON-RPC server (``retrace serve``) and the headless
agent (``retrace run``) — gets its parts from :func:`open_services`; nothing else constructs them.
This is also the one place that reads the model endpoint from the environment
(:meth:`ModelEndpoint.from_environment`) and the only production module that imports the fake
Messages API (:mod:`retrace.offline`), which answers when no real endpoint is configured (the
offline demo).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from anthropic import AsyncAnthropic

from retrace import credentials
from retrace.agent.events import AgentHost
from retrace.agent.runtime import ClientFactory
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.gate import EngineGate
from retrace.offline import FakeModel, load_scenario

log = logging.getLogger(__name__)

T = TypeVar("T")

ENV_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_FAKE_MODEL = "RETRACE_FAKE_MODEL"
OFFLINE_API_KEY = "retrace-offline"
"""Key sent to an endpoint configured without one (a local fake needs none)."""
DEMO_SCENARIO = "demo"


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the Messages API is, as the process was configured (environment variables)."""

    base_url: str | None = None
    api_key: str | None = None
    fake_scenario: str | None = None
    """``RETRACE_FAKE_MODEL``: serve this fake scenario (name or file) whatever else is set."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> ModelEndpoint:
        env = os.environ if env is None else env
        return cls(
            base_url=env.get(ENV_BASE_URL) or None,
            # The key may have arrived on a pipe and left the environment (retrace.credentials).
            api_key=(env.get(ENV_API_KEY) if env is not os.environ else credentials.get(ENV_API_KEY)) or None,
            fake_scenario=env.get(ENV_FAKE_MODEL) or None,
        )

    def offline_scenario(self, configured_base_url: str | None) -> str | None:
        """The fake scenario to serve, or ``None`` when a real endpoint is meant: a forced scenario
        always wins; otherwise the demo answers only when no endpoint (setting or environment)
        and no key are configured."""
        if self.fake_scenario:
            return self.fake_scenario
        if configured_base_url or self.base_url or self.api_key:
            return None
        return DEMO_SCENARIO

    def client_factory(self) -> ClientFactory:
        """Clients for the agent: the settings' endpoint beats the environment's; retries are the
        agent's own (reported as events), so the SDK's are off."""

        def make(settings: AgentSettings) -> AsyncAnthropic:
            base_url = settings.base_url or self.base_url
            auth_token = credentials.get("ANTHROPIC_AUTH_TOKEN")
            api_key = self.api_key or (OFFLINE_API_KEY if base_url and not auth_token else None)
            return AsyncAnthropic(base_url=base_url, api_key=api_key, auth_token=auth_token, max_retries=0)

        return make


_offline_lock = threading.Lock()
_offline: dict[str, FakeModel] = {}


def start_offline_model(scenario: str) -> str:
    """Serve the fake Messages API for ``scenario`` in this process; its base URL. Idempotent per
    scenario: a second workspace (or a restarted service) reuses the running one."""
    with _offline_lock:
        model = _offline.get(scenario)
        if model is None:
            model = FakeModel(load_scenario(scenario))
            model.start()
            _offline[scenario] = model
        return model.base_url


def stop_offline_models() -> None:
    """Stop every fake model this process started (tests; the server simply exits)."""
    with _offline_lock:
        for model in _offline.values():
            model.stop()
        _offline.clear()


@dataclass
class Services:
    """Everything that serves one workspace, built by :func:`open_services`."""

    workspace: Path
    engine: Engine
    gate: EngineGate
    agent: AgentService
    fake_model_url: str | None = None
    """Base URL of the in-process fake Messages API (offline demo), when it was started."""
    closed: bool = field(default=False)

    async def run(self, call: Callable[[Engine], T]) -> T:
        """``call(engine)`` in a worker thread, serialised with the agent's engine calls."""
        return await self.gate.run(call)

    def close(self) -> None:
        """Release the store (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.engine.close()


async def open_services(
    workspace: Path,
    store: Path | None,
    host: AgentHost,
    settings: AgentSettings,
    *,
    config: EngineConfig | None = None,
    endpoint: ModelEndpoint | None = None,
) -> Services:
    """Open the engine (creating the store and its baseline on first use), start the offline
    model when no real endpoint is configured, build the agent and reload its sessions from the
    journals (crash resume). On failure the store is closed again."""
    endpoint = endpoint or ModelEndpoint.from_environment()
    engine = await asyncio.to_thread(Engine.open, workspace, store, config=config)
    try:
        for line in engine.recovered:
            log.warning("%s", line)
        scenario = endpoint.offline_scenario(settings.base_url)
        fake_url = await asyncio.to_thread(start_offline_model, scenario) if scenario else None
        if fake_url is not None:
            log.info("offline mode: fake Messages API at %s", fake_url)
            settings = settings.model_copy(update={"base_url": fake_url})
        gate = EngineGate(engine)
        agent = AgentService(engine, host, settings, endpoint.client_factory(), gate=gate)
        interrupted = await agent.load()
        if interrupted:
            log.warning("resumed after a crash: interrupted tool calls in %s", ", ".join(interrupted))
    except BaseException:
        engine.close()
        raise
    return Services(workspace=workspace, engine=engine, gate=gate, agent=agent, fake_model_url=fake_url)
