"""The composition root: builds the engine, its gate, the model client and the agent service, once.

Everything that serves a workspace — the JSON-RPC server (``retrace serve``) and the headless
agent (``retrace run``) — gets its parts from :func:`open_services`; nothing else constructs them.
This is also the one place that reads the model endpoint from the environment
(:meth:`ModelEndpoint.from_environment`) and the only production module that imports the fake
Messages API (:mod:`retrace.offline`). The offline demo answers only in a demo folder (one whose
root holds :data:`DEMO_MARKER`, made by the extension's "Try the Demo") or when
``RETRACE_FAKE_MODEL`` forces a scenario: with no key and no endpoint anywhere else, an agent turn
is refused at once (:class:`NoApiKey`), so a scripted model never edits real work.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from retrace import credentials
from retrace.agent.model.interface import ModelClient
from retrace.agent.model.providers import EditorModels, make_client
from retrace.agent.model.settings import ModelSettings
from retrace.agent.notifications import AgentHost
from retrace.agent.runtime import ClientFactory
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError, StoreLocked
from retrace.engine.gate import EngineGate
from retrace.engine.store.blobs import BlobSource
from retrace.engine.store.layout import default_store_dir
from retrace.offline import FakeModel, load_scenario
from retrace.protocol.models import ModelMode
from retrace.relay import holder

if TYPE_CHECKING:
    from retrace.agent.model.anthropic_family import AnthropicFamilyClient

log = logging.getLogger(__name__)

T = TypeVar("T")

ENV_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_FAKE_MODEL = "RETRACE_FAKE_MODEL"
OFFLINE_API_KEY = "retrace-offline"
"""Key sent to an endpoint configured without one (a local fake needs none)."""
DEMO_SCENARIO = "demo"
DEMO_MARKER = ".retrace-demo.json"
"""A file at a workspace root that makes it a demo folder: the offline demo model may answer there."""
ENV_AUTH_TOKEN = "ANTHROPIC_AUTH_TOKEN"

NO_KEY_MESSAGE = (
    "No model configured: run 'Retrace: Choose Model Provider' (a Copilot subscription, Bedrock, "
    "Vertex or a local model), 'Retrace: Set API Key' (Anthropic) or 'Retrace: Try the Demo'"
)


class NoApiKey(RetraceError):  # noqa: N818 (contract names)
    """An agent turn was asked for while no model is configured (and this is no demo folder)."""

    code = "noApiKey"

    def __init__(self) -> None:
        super().__init__(NO_KEY_MESSAGE)


class ModelNotConfigured(RetraceError):  # noqa: N818 (contract names)
    """The chosen provider's settings cannot make a request; the message names the setting."""

    code = "modelNotConfigured"


def is_demo_folder(workspace: Path | None) -> bool:
    """Whether ``workspace`` is a demo folder (its root holds :data:`DEMO_MARKER`)."""
    return workspace is not None and (workspace / DEMO_MARKER).is_file()


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the Messages API is, as the process was configured (environment variables)."""

    base_url: str | None = None
    api_key: str | None = None
    fake_scenario: str | None = None
    """``RETRACE_FAKE_MODEL``: serve this fake scenario (name or file) whatever else is set."""
    auth_token: str | None = None
    """``ANTHROPIC_AUTH_TOKEN``: a bearer token instead of a key (counts as a configured model)."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> ModelEndpoint:
        env = os.environ if env is None else env
        return cls(
            base_url=env.get(ENV_BASE_URL) or None,
            # The key may have arrived on a pipe and left the environment (retrace.credentials).
            api_key=(env.get(ENV_API_KEY) if env is not os.environ else credentials.get(ENV_API_KEY)) or None,
            fake_scenario=env.get(ENV_FAKE_MODEL) or None,
            auth_token=(env.get(ENV_AUTH_TOKEN) if env is not os.environ else credentials.get(ENV_AUTH_TOKEN))
            or None,
        )

    def configured(self, configured_base_url: str | None) -> bool:
        """Whether a real model is meant: an endpoint (setting or environment), a key or a token."""
        return bool(configured_base_url or self.base_url or self.api_key or self.auth_token)

    def offline_scenario(self, configured_base_url: str | None, workspace: Path | None = None) -> str | None:
        """The fake scenario to serve, or ``None``: a forced scenario always wins; otherwise the
        demo answers only in a demo folder (:func:`is_demo_folder`) where no endpoint and no key
        are configured. A real folder without a key gets no model at all (:meth:`model_mode`)."""
        if self.fake_scenario:
            return self.fake_scenario
        if self.configured(configured_base_url) or not is_demo_folder(workspace):
            return None
        return DEMO_SCENARIO

    def model_mode(self, configured_base_url: str | None, workspace: Path | None) -> ModelMode:
        """What answers agent turns in ``workspace`` with these settings."""
        if self.offline_scenario(configured_base_url, workspace) is not None:
            return "demo"
        return "live" if self.configured(configured_base_url) else "noKey"

    def client_factory(self, editor_models: EditorModels | None = None) -> ClientFactory:
        """Clients for the agent, for the provider the settings choose
        (:func:`retrace.agent.model.providers.make_client`). ``editor_models``: the editor's
        language models (``vscode-lm``), when an editor is connected."""

        def make(settings: AgentSettings) -> ModelClient:
            return make_client(
                settings.access,
                anthropic=lambda: self.anthropic_client(settings),
                editor_models=editor_models,
            )

        return make

    def anthropic_client(self, settings: AgentSettings) -> AnthropicFamilyClient:
        """The Anthropic API client: the settings' endpoint beats the environment's; retries are
        the agent's own (reported as events), so the SDK's are off."""
        from retrace.agent.model.anthropic_family import AnthropicFamilyClient
        from retrace.agent.model.sdk_http import anthropic_sdk

        base_url = settings.base_url or self.base_url
        auth_token = credentials.get(ENV_AUTH_TOKEN)
        api_key = self.api_key or (OFFLINE_API_KEY if base_url and not auth_token else None)
        sdk = anthropic_sdk(base_url, api_key, auth_token)
        check = "the retrace.baseUrl setting (or ANTHROPIC_BASE_URL)"
        return AnthropicFamilyClient(sdk, "anthropic", where=str(sdk.base_url), check=check)


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


@dataclass(eq=False)
class Services:
    """Everything that serves one workspace, built by :func:`open_services`. Compared and hashed
    by identity: per-services state is kept in weak maps keyed by it (it dies with it)."""

    workspace: Path
    engine: Engine
    gate: EngineGate
    agent: AgentService
    fake_model_url: str | None = None
    """Base URL of the in-process fake Messages API (offline demo), when it was started."""
    endpoint: ModelEndpoint = field(default_factory=ModelEndpoint)
    closed: bool = field(default=False)

    def model_mode(self, configured_base_url: str | None, model: ModelSettings | None = None) -> ModelMode:
        """The model mode now (a base URL set after start-up makes a ``noKey`` server ``live``;
        a provider other than the Anthropic API needs no key: it is ``live``)."""
        if self.fake_model_url is not None:
            return "demo"
        if model is not None and model.provider != "anthropic":
            return "live"
        return "live" if self.endpoint.configured(configured_base_url) else "noKey"

    def require_model(self, configured_base_url: str | None, model: ModelSettings | None = None) -> None:
        """Refuse before an agent turn that no model could answer: :class:`NoApiKey` when
        nothing is configured, :class:`ModelNotConfigured` (naming the setting) when the chosen
        provider's settings cannot make a request."""
        mode = self.model_mode(configured_base_url, model)
        if mode == "noKey":
            raise NoApiKey
        problem = model.problem() if model is not None and mode == "live" else None
        if problem is not None:
            raise ModelNotConfigured(problem)

    async def run(self, call: Callable[[Engine], T]) -> T:
        """``call(engine)`` in a worker thread, serialised with the agent's engine calls."""
        return await self.gate.run(call)

    def close(self) -> None:
        """Release the store (idempotent)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.agent.background.kill_all()
        finally:
            self.engine.close()


async def open_services(
    workspace: Path,
    store: Path | None,
    host: AgentHost,
    settings: AgentSettings,
    *,
    config: EngineConfig | None = None,
    endpoint: ModelEndpoint | None = None,
    blob_source: BlobSource | None = None,
    defer_catch_up: bool = False,
    editor_models: EditorModels | None = None,
) -> Services:
    """Open the engine (creating the store and its baseline on first use), start the offline
    model in a demo folder with no real endpoint configured (or when one is forced), build the
    agent and reload its sessions from the journals (crash resume). On failure the store is closed again.
    A store held by a headless holder (``retrace.relay.holder``) is asked back first.
    ``blob_source``: where blobs only a remote holds are read from (a configured remote's).
    ``defer_catch_up``: leave the walk for changes made while closed pending
    (:mod:`retrace.engine.catch_up`): the caller runs ``Engine.catch_up`` through the gate when it
    has answered what it must answer first; anything that needs it runs it before.
    ``editor_models``: the connected editor's language models (the ``vscode-lm`` provider)."""
    endpoint = endpoint or ModelEndpoint.from_environment()

    def open_engine() -> Engine:
        return Engine.open(
            workspace, store, config=config, blob_source=blob_source, defer_catch_up=defer_catch_up
        )

    # A headless holder (started by a command-line call while no editor ran) lets go when asked.
    where = store if store is not None else default_store_dir(workspace)
    engine = await asyncio.to_thread(holder.open_releasing, open_engine, where, StoreLocked)
    try:
        for line in engine.recovered:
            log.warning("%s", line)
        scenario = endpoint.offline_scenario(settings.base_url, workspace)
        fake_url = await asyncio.to_thread(start_offline_model, scenario) if scenario else None
        if fake_url is not None:
            log.info("offline mode: fake Messages API at %s", fake_url)
            # The offline model answers as the Anthropic API, whatever provider is configured.
            settings = settings.model_copy(update={"base_url": fake_url, "access": ModelSettings()})
        gate = EngineGate(engine)
        agent = AgentService(engine, host, settings, endpoint.client_factory(editor_models), gate=gate)
        interrupted = await agent.load()
        if interrupted:
            log.warning("resumed after a crash: interrupted tool calls in %s", ", ".join(interrupted))
    except BaseException:
        engine.close()
        raise
    return Services(
        workspace=workspace, engine=engine, gate=gate, agent=agent, fake_model_url=fake_url, endpoint=endpoint
    )
