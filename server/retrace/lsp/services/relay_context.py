"""What a relay method may use (:class:`RelayContext`): the engine of the process holding the
store, through its gate, and that process's optional abilities (tell the editor, let go of the
store, the editor's own restore). The methods (:mod:`.relay`, :mod:`.relay_hooks`,
:mod:`.relay_restore`) take one; the editor's server and a headless holder each build theirs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from retrace.agent.notifications import CheckpointCreated, EventBase
from retrace.relay import wire
from retrace.relay.server import MethodError

if TYPE_CHECKING:
    from retrace.engine.engine import Engine
    from retrace.engine.gate import EngineGate
    from retrace.protocol.models import RestoreParams

T = TypeVar("T")


class GoneError(MethodError):
    """The engine was closed before the call reached it: nothing was done, the caller may open
    the store itself. Recognised even when a method wrapped it in an error of its own."""


def is_gone(exc: BaseException | None) -> bool:
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
