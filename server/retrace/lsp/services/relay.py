"""The relay methods: command-line work handed over a local socket to the process holding the
store (:mod:`retrace.relay`) — the editor's server, or a headless holder (``cli/holder.py``).

:data:`METHODS` is the table: a name, the params model that validates the request, and the
coroutine that runs it against a :class:`RelayContext` — the engine through the gate, serialised
with every other engine call of that process, plus two optional abilities: ``notify`` tells the
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
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from retrace.agent.events import CheckpointCreated, EventBase
from retrace.camel import CamelModel, dump, validation_message
from retrace.engine.errors import RetraceError
from retrace.lsp.services import relay_hooks, relay_restore
from retrace.relay import wire
from retrace.relay.server import MethodError, RelayServer, Request

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine.engine import Engine
    from retrace.engine.gate import EngineGate
    from retrace.lsp.server import RetraceServer
    from retrace.protocol.models import RestoreParams

log = logging.getLogger(__name__)

T = TypeVar("T")

CALL_TIMEOUT_S = 300.0
"""How long one relayed call may wait for the engine (behind an agent's long capture)."""


class GoneError(MethodError):
    """The engine was closed before the call reached it: nothing was done, the caller may open
    the store itself. Recognised even when a method wrapped it in an error of its own."""


def _gone(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, GoneError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


class RelayContext:
    """What a relay method may use: the engine through ``gate``, ``notify`` (tell the editor;
    ``None``: no editor) and ``release`` (let go of the store; ``None``: never, the editor's
    server). :meth:`close_engine` closes the engine through the gate: a call that reaches the gate
    afterwards is refused with :data:`wire.GONE` (its caller opens the store itself)."""

    def __init__(
        self,
        gate: EngineGate,
        workspace: Path,
        *,
        notify: Callable[[CheckpointCreated | EventBase], Awaitable[None]] | None = None,
        release: Callable[[], Awaitable[dict[str, Any]]] | None = None,
        restore: Callable[[RestoreParams], Awaitable[dict[str, Any]]] | None = None,
    ) -> None:
        self.gate = gate
        self.workspace = workspace
        self.store_dir = Path(gate.engine.store_dir)
        self.notify = notify
        self.release = release
        self.restore = restore
        """The editor's own restore (its trust rule, running turn, editor applier, unsaved
        buffers); ``None`` in a headless holder, which restores on disk as the command line."""
        self.closed = False
        self.last_call = time.monotonic()
        """When the last call arrived or ended (a headless holder's idle clock)."""
        self.in_flight = 0
        """Calls being served now."""
        self._count = threading.Lock()

    def began(self) -> None:
        with self._count:
            self.in_flight += 1
            self.last_call = time.monotonic()

    def ended(self) -> None:
        with self._count:
            self.in_flight -= 1
            self.last_call = time.monotonic()

    async def run(self, call: Callable[[Engine], T]) -> T:
        """``call(engine)`` through the gate, unless the engine was closed meanwhile."""

        def guarded(engine: Engine) -> T:
            if self.closed:
                raise GoneError(wire.GONE, "the store's holder has let go of it")
            return call(engine)

        return await self.gate.run(guarded)

    async def close_engine(self) -> None:
        """Close the engine after the calls already in the gate (releases the store's lock)."""

        def close(engine: Engine) -> None:
            self.closed = True
            engine.close()

        await self.gate.run(close)

    async def tell(self, event: CheckpointCreated | EventBase) -> None:
        if self.notify is not None:
            await self.notify(event)


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
        lambda engine: engine.checkpoint(
            label=params.label, changed_paths=params.paths, kind=params.kind, session_id=params.session_id
        )
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
    if _gone(exc):
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


def start(server: RetraceServer, services: Services) -> RelayServer | None:
    """The editor's server: its relay tells the editor, and never releases the store."""
    from retrace.lsp.host import LspAgentHost  # the language server's: not for a headless holder

    ctx = RelayContext(
        services.gate,
        services.workspace,
        notify=LspAgentHost(server).emit,
        restore=relay_restore.editor_restore(server, services),
    )
    return listen(ctx, asyncio.get_running_loop())


def stop(relay: RelayServer | None) -> None:
    if relay is not None:
        relay.close()
