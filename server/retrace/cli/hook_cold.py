"""``retrace hook``'s cold path: no server holds the store, so this process opens it (creating it
when missing), applies the one event (:class:`retrace.app.hooks.service.HookService`) and closes
it. An event Retrace does not record never opens the store. A store another process holds is
waited for, asking the relay again each time (a server may have started meanwhile), until the
deadline; then the event is logged and dropped. The engine's own warnings go to the hook log.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrace.app.hooks.registry import adapter_for
from retrace.engine.errors import RetraceError, StoreLocked

if TYPE_CHECKING:
    from collections.abc import Callable

    from retrace.app.hooks.model import HookEvent
    from retrace.cli.hook_log import HookLog

_FIRST_WAIT_S = 0.02


class _ToHookLog(logging.Handler):
    """The engine's warnings (damaged journal lines, a full disk) into the hook log."""

    def __init__(self, log: HookLog) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log.say(f"{record.name}: {record.getMessage()}")


def apply(
    agent: str,
    raw: dict[str, Any],
    where: tuple[Path, Path],
    log: HookLog,
    ask_server: Callable[[], bool | None],
    *,
    deadline: float,
) -> bool:
    """Apply ``raw`` (an ``agent`` hook event) to the store of ``where`` (workspace, store) in
    this process; every problem is logged, nothing raised for what the input or the store did.
    ``ask_server``: hand the event to a server again (``False``: none took it). ``True`` when
    this process opened the store and applied the event (a headless holder may take over)."""
    handler = _ToHookLog(log)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        event = adapter_for(agent).parse(raw)
        if event.kind == "ignored":
            return False
        return _apply(event, where, log, ask_server, deadline)
    except (RetraceError, OSError) as exc:
        log.say(f"not recorded: {exc}")
        return False
    finally:
        root.removeHandler(handler)


def _apply(
    event: HookEvent,
    where: tuple[Path, Path],
    log: HookLog,
    ask_server: Callable[[], bool | None],
    deadline: float,
) -> bool:
    from retrace.app.hooks.service import HookService  # the engine: only for an event it records
    from retrace.engine.config import EngineConfig
    from retrace.engine.engine import Engine

    workspace, store = where
    wait = _FIRST_WAIT_S
    while True:
        try:
            # No watcher: a one-shot writer's capture is a stat walk either way (cli/commands.py).
            engine = Engine.open(workspace, store, catch_up=False, config=EngineConfig(watcher=False))
        except StoreLocked as exc:
            if time.monotonic() >= deadline:
                log.say(
                    f"{exc}; no Retrace server answered: event dropped (the next checkpoint has its changes)"
                )
                return False
            time.sleep(wait)
            wait = min(wait * 2, 0.5)
            if ask_server() is not False:
                return False
            continue
        with engine:
            outcome = HookService().apply(engine, event)
        for note in outcome.notes:
            log.say(note)
        return True
