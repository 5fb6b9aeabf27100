"""Automatic cleanup: the retention settings (``retrace.retention.*``) applied by the editor's
server on its own, not only on an explicit collection.

When: once at start-up, after the first answer (with the rest of start-up's deferred work), and
then each time no agent turn has run for ``retention.idleMinutes`` (``0``: never on its own).
Only when a collection would drop something (:func:`retrace.engine.gc.retention_due`: count and
age quotas from memory, the size quota from a walk of the store made off the gate), and never
while an agent turn runs (its checkpoints are in flight) or a restore is between its steps
(:mod:`retrace.lsp.services.restore_flight`) — the same collection, through the same
gate, as *Retrace: Collect Garbage* (:func:`store_health.collect_garbage`): it keeps the head,
and subagent stores (``<store>/tasks/``) follow :mod:`retrace.app.task_stores` (also due when a
finished one is older than the retention window and nothing points at it any more). What it
removed is logged and counted (:data:`RUNS` in this process; the metrics' totals in
``cache/auto-cleanup.json``, :mod:`retrace.app.metrics.cleanups`), and the storage measure (its
alerts) is taken again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrace.app import task_stores
from retrace.app.metrics.cleanups import add_run
from retrace.engine.errors import RetraceError
from retrace.engine.gc import retention_due, store_bytes
from retrace.engine.models import GcReport
from retrace.engine.store.layout import StoreLayout
from retrace.lsp.services.restore_flight import in_flight
from retrace.lsp.services.store_health import collect_garbage

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)

POLL_S = 30.0
"""How often the idle watch looks whether a turn runs."""


@dataclass
class Runs:
    """What the automatic cleanups did in this server process."""

    runs: int = 0
    checkpoints_dropped: int = 0
    bytes_freed: int = 0


RUNS = Runs()


async def busy(services: Services) -> bool:
    """Does an agent turn run in any session now, or a restore (editor or hunk) between its steps?"""
    if in_flight(services):
        return True
    return any(services.agent.running(sid) for sid in await services.run(lambda e: e.sessions()))


async def cleanup_if_due(server: ServerPort, services: Services, why: str) -> GcReport | None:
    """Collect when retention would drop something and no turn runs (``None``: nothing done)."""
    if services.engine.readonly or await busy(services):
        return None
    size = await asyncio.to_thread(store_bytes, StoreLayout(services.engine.store_dir))
    policy = services.engine.config.retention
    due = await services.run(
        lambda e: retention_due(e.history, policy, e.head.id, size) or task_stores.due(e)
    )
    if not due:
        return None
    try:
        report = await collect_garbage(server, services)
    except RetraceError as e:  # a turn started meanwhile, a store that cannot be written
        log.info("automatic cleanup (%s) skipped: %s", why, e)
        return None
    # The metrics' totals (kept in the store: the health view and a restart see them).
    await asyncio.to_thread(add_run, StoreLayout(services.engine.store_dir), report)
    await server.metrics.check()  # the storage measure and its alerts see the room made
    RUNS.runs += 1
    RUNS.checkpoints_dropped += report.checkpoints_dropped
    RUNS.bytes_freed += report.bytes_freed
    log.info(
        "automatic cleanup (%s, retention %d checkpoints / %g days / %d bytes): dropped %d "
        "checkpoint(s), removed %d blob(s), freed %d bytes",
        why,
        policy.max_checkpoints,
        policy.max_age_days,
        policy.max_bytes,
        report.checkpoints_dropped,
        report.blobs_removed,
        report.bytes_freed,
    )
    return report


async def watch_idle(server: ServerPort, services: Services, poll_s: float = POLL_S) -> None:
    """Forever: after each stretch of ``idleMinutes`` with no turn, one cleanup if due."""
    idle_s = services.engine.config.retention.idle_minutes * 60
    if idle_s <= 0:
        return
    last_busy = time.monotonic()
    cleaned = False
    while True:
        await asyncio.sleep(min(poll_s, idle_s))
        if await busy(services):
            last_busy, cleaned = time.monotonic(), False
        elif not cleaned and time.monotonic() - last_busy >= idle_s:
            with contextlib.suppress(RetraceError, OSError):
                await cleanup_if_due(server, services, "idle")
            cleaned = True
            last_busy = time.monotonic()  # the next one after another idle stretch


_watchers: set[asyncio.Task[None]] = set()


async def start(server: ServerPort, services: Services) -> None:
    """Start-up's cleanup (if due), then the idle watch."""
    try:
        await cleanup_if_due(server, services, "start-up")
    except (RetraceError, OSError) as e:
        log.warning("automatic cleanup at start-up failed: %s", e)
    task = asyncio.get_running_loop().create_task(watch_idle(server, services), name="retrace-auto-gc")
    _watchers.add(task)
    task.add_done_callback(_watchers.discard)
