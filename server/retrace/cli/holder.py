"""The headless store holder: ``python -m retrace.cli.holder --workspace W --store S``.

Started detached (its own session, stdio on ``/dev/null``) by a cold ``retrace checkpoint`` or
hook call once that call has done its own work (:func:`retrace.cli.forward.start_holder`), so the
next calls are forwarded over the relay instead of opening the store each time. It opens the
store as that command would (writer lock, session ``cli``, a configured remote's blob source, no
catch-up: what changed since the head belongs to the next checkpoint, as for ``retrace
checkpoint``), serves the SAME relay method
table as the editor's server (``lsp/services/relay.py``; no editor to tell) and logs to
``<store>/runtime/holder.log``. The rules (``retrace.relay.holder``):

* one per store: the lock decides; a second starter finds the store locked and simply exits;
* it exits :data:`~retrace.relay.holder.IDLE_S` after its last call, at once when asked
  (relay ``release``: an editor server starting, a command needing the lock; answered once the
  lock is free), on ``SIGTERM``/``SIGINT``, and when its workspace, its store, the store's
  ``store.json`` or lock file, or its relay socket is deleted or replaced;
* its marker ``<store>/runtime/holder-<pid>`` exists from before it tries the lock until it exits.

Never prints; every problem goes to the log. Exit code 0 whatever happened (nobody waits for it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from retrace.cli.commands import blob_source
from retrace.cli.forward import CLI_SESSION
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError, StoreLocked
from retrace.engine.gate import EngineGate
from retrace.lsp.services.relay import listen
from retrace.lsp.services.relay_context import RelayContext
from retrace.relay import holder
from retrace.relay.server import path_identity

log = logging.getLogger("retrace.holder")

TICK_S = 0.25
"""How often the holder looks at its idle clock and at what it holds."""
DRAIN_S = 5.0
"""How long an exiting holder lets the answers of calls in flight (a release) reach their callers."""
LOG_MAX_BYTES = 1 << 20
"""A log over this size at start is moved to ``holder.log.1`` (one old log kept)."""


class Held:
    """What the holder holds, by identity (device, inode) at open: the workspace, the store, its
    ``store.json`` and its lock file. :meth:`lost` names the first one deleted or replaced."""

    def __init__(self, workspace: Path, store: Path) -> None:
        self.paths = [workspace, store, store / "store.json", store / "lock"]
        self.ids = [path_identity(p) for p in self.paths]

    def lost(self) -> str | None:
        for path, ident in zip(self.paths, self.ids, strict=True):
            if ident is None or path_identity(path) != ident:
                return f"{path} was deleted or replaced"
        return None


def _log_to(store: Path) -> None:
    path = store / "runtime" / "holder.log"
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        if path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_name("holder.log.1"))
    try:
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s holder[%(process)d] %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="retrace-holder")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--store", required=True)
    args = parser.parse_args(argv)
    store = Path(args.store).absolute()
    _log_to(store)
    try:
        marker = holder.mark(store)
    except OSError as exc:
        log.warning("no marker, no holder: %s", exc)
        return 0
    try:
        holder.clear_stale(store)
        return _hold(Path(args.workspace), store)
    except Exception:
        log.exception("the holder failed")
        return 0
    finally:
        with contextlib.suppress(OSError):
            marker.unlink()


def _hold(workspace: Path, store: Path) -> int:
    try:
        source = blob_source(store, workspace)  # a store with a remote reads remote-only blobs
        engine = Engine.open(
            workspace, store, session_id=CLI_SESSION, create=False, catch_up=False, blob_source=source
        )
    except StoreLocked as exc:
        log.info("not needed: %s", exc)  # another holder, the editor's server, or a command
        return 0
    except RetraceError as exc:
        log.warning("cannot hold the store: %s", exc)
        return 0
    log.info("holding %s for %s", store, engine.workspace)
    return asyncio.run(_serve(engine))


async def _serve(engine: Engine) -> int:
    loop = asyncio.get_running_loop()
    stop, released = asyncio.Event(), asyncio.Event()

    async def release() -> dict[str, bool]:
        stop.set()
        await released.wait()
        return {"released": True}

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # What is held is taken before the relay listens: a caller that sees the socket may move or
    # replace the store at once, and identities taken after that would be the replacement's.
    held = Held(engine.workspace, Path(engine.store_dir))
    ctx = RelayContext(EngineGate(engine), engine.workspace, release=release)
    relay = listen(ctx, loop)
    if relay is None:
        engine.close()
        return 0
    reason = await _until_done(ctx, relay.still_bound, held, stop)
    log.info("letting go of the store: %s", reason)
    relay.close()
    try:
        await ctx.close_engine()
    except Exception:  # the lock is released whatever else failed (Engine.close)
        log.exception("closing the engine failed")
    released.set()
    await asyncio.to_thread(relay.drain, DRAIN_S)
    return 0


async def _until_done(ctx: RelayContext, bound: Callable[[], bool], held: Held, stop: asyncio.Event) -> str:
    """Why the holder stops: asked to, idle, or what it holds is gone."""
    idle = holder.idle_seconds()
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), TICK_S)
        if stop.is_set():
            return "asked to"
        if (lost := held.lost()) is not None:
            return lost
        if not bound():
            return "its relay socket was removed"
        if time.monotonic() - ctx.last_call > idle and ctx.in_flight == 0:
            return f"idle for {idle:g} s"


if __name__ == "__main__":
    sys.exit(main())
