"""Metrics in the server: ``retrace/metrics/get`` (and ``retrace/health/get``, its drawable form),
the storage alerts and the scrape endpoint.

The numbers are ``app/metrics``'s, built from the store's files in a worker thread (never the
engine gate), exactly as ``retrace metrics`` builds them. Storage is measured against the
``retrace.retention.maxBytes`` setting: at start-up, on every snapshot, on a settings change, at
turn end and after a checkpoint (at most every :data:`CHECK_EVERY_S`); each rise into ``warning``
(80 %) or ``urgent`` (90 %) sends one ``retrace/storage/alert`` (:class:`Crossings`; the level
said last is remembered across restarts, :class:`AlertMemory`). The scrape
endpoint (``retrace.metrics.port``, 0 = off; never from an untrusted workspace) binds 127.0.0.1
only (``app/metrics/http.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Protocol

from retrace.app.metrics.collect import Collected, collect, snapshot
from retrace.app.metrics.health import build_health
from retrace.app.metrics.http import MetricsEndpoint, serve
from retrace.app.metrics.storage import AlertLevel, AlertMemory, Crossings, Series, alert_level
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.storage_usage import usage
from retrace.protocol.health import HealthView
from retrace.protocol.metrics import MetricsSnapshot, StorageAlert
from retrace.protocol.models import ServerSettings


class MetricsHost(Protocol):
    """What the metrics need of the server (``ServerPort``)."""

    settings: ServerSettings
    trusted: bool

    def send_notification(self, method: str, payload: Any) -> None: ...


log = logging.getLogger(__name__)

CHECK_EVERY_S = 10.0
"""The least time between two storage checks caused by checkpoints."""


def alert_message(level: AlertLevel, used: int, budget: int) -> str:
    pct = 100 * used / budget if budget > 0 else 0.0
    mib = 1024 * 1024
    head = "Retrace checkpoint storage is almost full" if level == "urgent" else "Retrace checkpoint storage"
    return (
        f"{head}: {used / mib:.1f} MiB of {budget / mib:.1f} MiB ({pct:.0f} % of retention's maxBytes). "
        "Run garbage collection, or change the retention settings."
    )


class ServerMetrics:
    """One server's metrics state: where the store is, the alert crossings, the endpoint."""

    def __init__(self, server: MetricsHost) -> None:
        self.server = server
        self.store_dir: Path | None = None
        self.workspace: Path | None = None
        self.crossings = Crossings()
        self.endpoint: MetricsEndpoint | None = None
        self._port = 0
        self._last_check = 0.0
        self._checking: asyncio.Task[None] | None = None

    @property
    def budget(self) -> int:
        return self.server.settings.retention.max_bytes

    def start(self, store_dir: Path, workspace: Path, *, check: bool = True) -> None:
        """Serve the workspace's metrics; ``check``: measure the storage now (else the caller
        calls :meth:`schedule_check` when the measure can no longer delay anything)."""
        self.store_dir, self.workspace = store_dir, workspace
        self.crossings = Crossings(AlertMemory(StoreLayout(store_dir)).read())
        self.apply_port()
        if check:
            self.schedule_check()

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        self._port = 0

    # ------------------------------------------------------------------ snapshot
    def _collect(self, *, record: bool) -> Collected:
        assert self.store_dir is not None and self.workspace is not None
        return collect(self.store_dir, self.workspace, self.budget, record=record)

    async def snapshot(self, *, text: bool) -> MetricsSnapshot:
        """The snapshot (the caller made sure the services started)."""
        collected = await asyncio.to_thread(self._collect, record=True)
        self.observe(collected.usage.total, collected.budget_bytes)
        return snapshot(collected, text=text)

    async def health(self) -> HealthView:
        """The health view (``retrace/health/get``): the snapshot without its text, made ready to draw."""
        return build_health(await self.snapshot(text=False), now=time.time())

    # ------------------------------------------------------------------ alerts
    def observe(self, used: int, budget: int) -> None:
        """Feed one measurement to the crossings; alert once on a rise."""
        before = self.crossings.level
        crossed = self.crossings.observe(alert_level(used, budget))
        if self.crossings.level != before and self.store_dir is not None:
            AlertMemory(StoreLayout(self.store_dir)).write(self.crossings.level)
        if crossed is None or crossed == "ok":
            return
        message = alert_message(crossed, used, budget)
        log.warning("%s", message)
        self.server.send_notification(
            "retrace/storage/alert",
            StorageAlert(
                level=crossed, used_bytes=used, budget_bytes=budget, ratio=used / budget, message=message
            ),
        )

    def _measure(self) -> int:
        assert self.store_dir is not None
        total = usage(StoreLayout(self.store_dir)).total
        Series(StoreLayout(self.store_dir)).add(total)
        return total

    async def check(self) -> None:
        """Measure storage now and alert on a crossing (never raises)."""
        if self.store_dir is None:
            return
        self._last_check = time.monotonic()
        try:
            used = await asyncio.to_thread(self._measure)
            self.observe(used, self.budget)
        except Exception as exc:  # a failed check must never reach the agent or the client
            log.warning("storage check failed: %s", exc)

    def schedule_check(self) -> None:
        if self._checking is not None and not self._checking.done():
            return
        self._checking = asyncio.get_running_loop().create_task(self.check())

    def checkpoint_created(self) -> None:
        if time.monotonic() - self._last_check >= CHECK_EVERY_S:
            self.schedule_check()

    # ------------------------------------------------------------------ endpoint
    def apply_port(self) -> None:
        """Start, move or stop the scrape endpoint to follow ``retrace.metrics.port``."""
        port = self.server.settings.metrics.port if self.server.trusted else 0
        if port == self._port or self.store_dir is None:
            return
        self.stop()
        try:
            self.endpoint = serve(port, lambda: self._collect(record=False))
        except OSError as exc:
            log.warning("metrics endpoint not started on 127.0.0.1:%d: %s", port, exc)
            return
        self._port = port
