"""Checkpoint storage against its budget: the alert level, threshold crossings and the storage
time series.

* the figure itself — bytes on disk by kind, subagent stores included — is
  :func:`retrace.engine.store_stats.storage_usage.usage` (shared with ``retrace stats``);
* :func:`alert_level` — pure: ``ok`` below 80 %, ``warning`` from 80 %, ``urgent`` from 90 %.
* :class:`Crossings` — pure: says a level once when storage crosses UP into it; it re-arms when
  storage falls back below. :class:`AlertMemory` keeps the last level across restarts.
* :class:`Series` — ``<store>/cache/storage-series.json``: (time, bytes) points, at most one a
  minute, the last :data:`SERIES_POINTS` kept, for drawing storage over time.
"""

from __future__ import annotations

import threading
import time
from typing import Literal

from retrace.engine.store.cache_file import read_cache_json, write_cache_json
from retrace.engine.store.layout import StoreLayout

AlertLevel = Literal["ok", "warning", "urgent"]
WARNING_RATIO = 0.8
URGENT_RATIO = 0.9
LEVELS: tuple[AlertLevel, ...] = ("ok", "warning", "urgent")


def alert_level(used: int, budget: int) -> AlertLevel:
    """``ok`` / ``warning`` (≥ 80 % of the budget) / ``urgent`` (≥ 90 %); no budget is ``ok``."""
    if budget <= 0:
        return "ok"
    ratio = used / budget
    if ratio >= URGENT_RATIO:
        return "urgent"
    return "warning" if ratio >= WARNING_RATIO else "ok"


class Crossings:
    """Turns successive levels into alerts: a level is said once when storage rises into it
    (``ok`` → ``urgent`` says ``urgent`` only); falling below re-arms it."""

    def __init__(self, start: AlertLevel = "ok") -> None:
        self.level: AlertLevel = start

    def observe(self, level: AlertLevel) -> AlertLevel | None:
        before, self.level = self.level, level
        return level if LEVELS.index(level) > LEVELS.index(before) else None


class AlertMemory:
    """The last alert level, kept in ``<store>/cache/storage-alert.json`` so a restart does not
    say again what was said (a cache: lost means ``ok``, i.e. one more alert at worst)."""

    def __init__(self, layout: StoreLayout) -> None:
        self.path = layout.cache / "storage-alert.json"

    def read(self) -> AlertLevel:
        def parse(raw: dict[str, str]) -> AlertLevel:
            level = raw["level"]
            if level not in LEVELS:
                raise ValueError(level)
            return level

        return read_cache_json(self.path, parse, "storage alert level") or "ok"

    def write(self, level: AlertLevel) -> None:
        write_cache_json(self.path, {"level": level}, "storage alert level")


SERIES_POINTS = 2000
SERIES_STEP_S = 60.0


_SERIES_LOCK = threading.Lock()


class Series:
    """The storage time series kept in the store's cache (a cache: lost or damaged means empty).
    Writers in one process take turns (the server writes from worker threads)."""

    def __init__(self, layout: StoreLayout) -> None:
        self.path = layout.cache / "storage-series.json"

    def read(self) -> list[tuple[float, int]]:
        def parse(raw: dict[str, list[list[float]]]) -> list[tuple[float, int]]:
            return [(float(t), int(b)) for t, b in raw["points"]]

        return read_cache_json(self.path, parse, "storage series") or []

    def add(self, total: int, *, now: float | None = None) -> list[tuple[float, int]]:
        """Record ``total`` now (unless the last point is under a minute old); the series."""
        t = time.time() if now is None else now
        with _SERIES_LOCK:
            points = self.read()
            if points and t - points[-1][0] < SERIES_STEP_S:
                return points
            points = [*points, (round(t, 3), total)][-SERIES_POINTS:]
            write_cache_json(self.path, {"points": points}, "storage series")
        return points
