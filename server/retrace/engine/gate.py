"""``EngineGate``: the one way asynchronous code calls the (blocking, not thread-safe) engine.

Every engine call from the agent and from the JSON-RPC server goes through the same gate, so
calls run in a worker thread one at a time and the event loop never blocks on disk I/O.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from retrace.engine.engine import Engine

T = TypeVar("T")


class EngineGate:
    """Runs blocking engine calls in a thread, one at a time.

    Pass the same ``lock`` to everything else that touches the engine synchronously."""

    def __init__(self, engine: Engine, lock: threading.RLock | None = None) -> None:
        self.engine = engine
        self.lock = lock or threading.RLock()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def locked() -> T:
            with self.lock:
                return fn(*args, **kwargs)

        # Shielded: once started, an engine write completes even if the caller is cancelled.
        return await asyncio.shield(asyncio.to_thread(locked))

    async def run(self, call: Callable[[Engine], T]) -> T:
        """``call(engine)`` through the gate."""
        return await self.call(call, self.engine)
