"""The relay methods: command-line work handed over a local socket to the process holding the
store (:mod:`retrace.relay`) — the editor's server, or a headless holder (``cli/holder.py``).

:data:`METHODS` is the table: a name, the params model that validates the request, and the
coroutine that runs it against a :class:`~.relay_context.RelayContext` — the engine through the
gate, serialised with every other engine call of that process, plus optional abilities: ``notify`` tells the
editor (the same ``retrace/agent/event`` and ``retrace/timeline/didChange`` a checkpoint of the
agent sends; the server passes its host, a headless holder nothing) and ``release`` lets go of the
store (only a headless holder has it: an editor server asked to release refuses and keeps
serving), and ``restore`` is the editor's own restore (only the editor's server has it: a holder
restores on disk). A new command is one entry: ``hook`` (:mod:`.relay_hooks`, another agent's
hook event) and ``restore`` (:mod:`.relay_restore`, ``retrace mcp``'s restores) are two.
:func:`bind` makes the relay thread's callables;
:func:`start` listens for the editor's server once its services are open (the engine holds the
store's lock); :func:`stop` closes the socket before the engine releases it.

Kept light on purpose (pydantic and the engine, no language server, no agent loop): a headless
holder imports it at its start, while the next call may already be waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from retrace.agent.notifications import CheckpointCreated
from retrace.camel import CamelModel, dump, validation_message
from retrace.engine.bookmarks import mark
from retrace.engine.errors import RetraceError
from retrace.lsp.services import relay_hooks, relay_restore
from retrace.lsp.services.relay_context import GoneError, RelayContext, is_gone
from retrace.relay import wire
from retrace.relay.server import MethodError, RelayServer, Request

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.services.port import AgentEmit, ServerPort

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


async def checkpoint(ctx: RelayContext, params: CheckpointParams) -> dict[str, Any]:
    """One checkpoint in the gate. Unlike the command line's own open there is no catch-up
    first: the holder records what others change at its boundaries already, and a catch-up here
    could take a file an agent tool is writing right now as someone else's change. With
    ``paths`` it records exactly those; without, every change since the head (as the CLI does)."""
    cp = await ctx.run(
        lambda engine: mark(engine, params.label, paths=params.paths, session_id=params.session_id)
    )
    await ctx.tell(CheckpointCreated(session_id=params.session_id, checkpoint=cp))
    return {"checkpoint": dump(cp)}


class ReleaseParams(CamelModel):
    """``release``: nothing to say."""


async def release(ctx: RelayContext, params: ReleaseParams) -> dict[str, Any]:
    """Let go of the store (a headless holder: answered once its lock is free). The editor's
    server refuses: it keeps serving, and the caller reports the lock as before."""
    if ctx.release is None:
        raise MethodError(wire.NOT_HOLDER, "the store is held by the editor's Retrace server, which keeps it")
    return await ctx.release()


@dataclass(frozen=True)
class RelayMethod:
    params: type[BaseModel]
    run: Callable[[RelayContext, Any], Coroutine[Any, Any, dict[str, Any]]]


METHODS: dict[str, RelayMethod] = {
    "checkpoint": RelayMethod(CheckpointParams, checkpoint),
    "release": RelayMethod(ReleaseParams, release),
    "restore": RelayMethod(relay_restore.RelayRestoreParams, relay_restore.restore),
    "hook": RelayMethod(relay_hooks.HookParams, relay_hooks.hook),
}


def bind(
    ctx: RelayContext, loop: asyncio.AbstractEventLoop
) -> dict[str, Callable[[Request], dict[str, Any]]]:
    """The relay thread's callables for every method: validate, then run on ``loop``."""
    return {name: _bridge(ctx, loop, name, spec) for name, spec in METHODS.items()}


def _bridge(
    ctx: RelayContext, loop: asyncio.AbstractEventLoop, name: str, spec: RelayMethod
) -> Callable[[Request], dict[str, Any]]:
    def call(request: Request) -> dict[str, Any]:
        ctx.began()
        try:
            _same_workspace(ctx, request)
            try:
                params = spec.params.model_validate(request.params)
            except ValidationError as exc:
                raise MethodError(wire.INVALID_PARAMS, validation_message(name, exc)) from None
            future = asyncio.run_coroutine_threadsafe(spec.run(ctx, params), loop)
            try:
                return future.result(CALL_TIMEOUT_S)
            except Exception as exc:
                raise _refusal(exc) from None
        finally:
            ctx.ended()

    return call


def _refusal(exc: Exception) -> Exception:
    """What the relay answers for a method's failure: gone (nothing done), the method's own
    refusal, the engine's one-line error, else the error itself (an internal error)."""
    if is_gone(exc):
        return GoneError(wire.GONE, "the store's holder has let go of it")
    if isinstance(exc, MethodError):
        return exc
    if isinstance(exc, RetraceError):
        return MethodError(wire.FAILED, str(exc) or type(exc).__name__)
    return exc


def _same_workspace(ctx: RelayContext, request: Request) -> None:
    """The caller's workspace must be this holder's (opening the store would refuse another)."""
    if request.workspace is None:
        return
    try:
        same = Path(request.workspace).samefile(ctx.workspace)
    except OSError:
        same = False
    if not same:
        message = f"store {ctx.store_dir} belongs to workspace {ctx.workspace}, not {request.workspace}"
        raise MethodError(wire.FAILED, message)


def listen(ctx: RelayContext, loop: asyncio.AbstractEventLoop) -> RelayServer | None:
    """Listen for the store ``ctx`` holds; ``None`` (logged) when this platform or the relay
    directory does not allow it: the command line then reports the lock as before."""
    relay = None
    try:
        relay = RelayServer(ctx.store_dir, bind(ctx, loop))
        relay.start()
    except (wire.RelayUnavailableError, OSError) as exc:
        log.warning("relay for the command line not started: %s", exc)
        if relay is not None:
            relay.close()
        return None
    return relay


def start(server: ServerPort, services: Services, emit: AgentEmit) -> RelayServer | None:
    """The editor's server: its relay tells the editor (``emit``: the agent host's), and never
    releases the store."""
    ctx = RelayContext(
        services.gate,
        services.workspace,
        notify=emit,
        restore=relay_restore.editor_restore(server, services),
    )
    return listen(ctx, asyncio.get_running_loop())


def stop(relay: RelayServer | None) -> None:
    if relay is not None:
        relay.close()
