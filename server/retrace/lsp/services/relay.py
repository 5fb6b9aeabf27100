"""The server's relay methods: command-line work handed over a local socket while this server
holds the store (:mod:`retrace.relay`).

:data:`METHODS` is the table: a name, the params model that validates the request, and the
coroutine that runs it on this server's engine — through the gate, serialised with the agent's
own checkpoints — and tells the editor (the same ``retrace/agent/event`` and
``retrace/timeline/didChange`` a checkpoint of the agent sends). Another agent's hook event
is one more entry (``hook``: :mod:`.relay_hooks`). :func:`start` listens once the services are
open (the engine holds the store's lock); :func:`stop` closes the socket before the engine releases it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from retrace.agent.events import CheckpointCreated
from retrace.camel import CamelModel, dump
from retrace.engine.errors import RetraceError
from retrace.lsp.host import LspAgentHost
from retrace.lsp.rpc import validation_message
from retrace.lsp.services import relay_hooks, relay_restore
from retrace.relay import wire
from retrace.relay.server import MethodError, RelayServer, Request

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 300.0
"""How long one relayed call may wait for the engine (behind an agent's long capture)."""


class CheckpointParams(CamelModel):
    """``checkpoint``: what ``retrace checkpoint`` would record if it could open the store."""

    label: str = Field(default="", max_length=4096)
    paths: list[str] | None = None
    """Exactly these changed paths (workspace-relative or absolute inside it); ``None``: detect."""
    kind: Literal["manual"] = "manual"
    session_id: str = Field(default="cli", pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
    """The session the checkpoint joins (the command line's own by default)."""


async def checkpoint(server: RetraceServer, services: Services, params: CheckpointParams) -> dict[str, Any]:
    """One checkpoint in the gate. Unlike the command line's own open there is no catch-up
    first: this server records what others change at its boundaries already, and a catch-up here
    could take a file an agent tool is writing right now as someone else's change. With
    ``paths`` it records exactly those; without, every change since the head (as the CLI does)."""
    cp = await services.run(
        lambda engine: engine.checkpoint(
            label=params.label, changed_paths=params.paths, kind=params.kind, session_id=params.session_id
        )
    )
    await LspAgentHost(server).emit(CheckpointCreated(session_id=params.session_id, checkpoint=cp))
    return {"checkpoint": dump(cp)}


@dataclass(frozen=True)
class RelayMethod:
    params: type[BaseModel]
    run: Callable[[RetraceServer, Services, Any], Awaitable[dict[str, Any]]]


METHODS: dict[str, RelayMethod] = {
    "checkpoint": RelayMethod(CheckpointParams, checkpoint),
    "restore": RelayMethod(relay_restore.RelayRestoreParams, relay_restore.restore),
    "hook": RelayMethod(relay_hooks.HookParams, relay_hooks.hook),
}


def _bridge(
    server: RetraceServer, services: Services, loop: asyncio.AbstractEventLoop, name: str, spec: RelayMethod
) -> Callable[[Request], dict[str, Any]]:
    """The relay thread's callable for one method: validate, then run on the server's loop."""

    def call(request: Request) -> dict[str, Any]:
        _same_workspace(services, request)
        try:
            params = spec.params.model_validate(request.params)
        except ValidationError as exc:
            raise MethodError(wire.INVALID_PARAMS, validation_message(name, exc)) from None
        future = asyncio.run_coroutine_threadsafe(_call(spec, server, services, params), loop)
        try:
            return future.result(CALL_TIMEOUT_S)
        except RetraceError as exc:
            raise MethodError(wire.FAILED, str(exc) or type(exc).__name__) from None

    return call


async def _call(spec: RelayMethod, server: RetraceServer, services: Services, params: Any) -> dict[str, Any]:
    return await spec.run(server, services, params)


def _same_workspace(services: Services, request: Request) -> None:
    """The caller's workspace must be this server's (opening the store would refuse another)."""
    if request.workspace is None:
        return
    try:
        same = Path(request.workspace).samefile(services.workspace)
    except OSError:
        same = False
    if not same:
        store = services.engine.store_dir
        message = f"store {store} belongs to workspace {services.workspace}, not {request.workspace}"
        raise MethodError(wire.FAILED, message)


def start(server: RetraceServer, services: Services) -> RelayServer | None:
    """Listen for the store the services hold; ``None`` (logged) when this platform or the
    relay directory does not allow it: the command line then reports the lock as before."""
    loop = asyncio.get_running_loop()
    methods = {name: _bridge(server, services, loop, name, spec) for name, spec in METHODS.items()}
    relay = None
    try:
        relay = RelayServer(Path(services.engine.store_dir), methods)
        relay.start()
    except (wire.RelayUnavailableError, OSError) as exc:
        log.warning("relay for the command line not started: %s", exc)
        if relay is not None:
            relay.close()
        return None
    return relay


def stop(relay: RelayServer | None) -> None:
    if relay is not None:
        relay.close()
