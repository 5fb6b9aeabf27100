"""Metrics on the wire: ``retrace/metrics/get`` (the snapshot a health view draws: the Prometheus
text plus the same numbers structured, the storage time series and the latency samples),
``retrace/restore/reason`` (the user's optional reason for a restore), ``retrace/store/gc``
(retention and unreferenced blobs now: the alert's one-click fix) and the
``retrace/storage/alert`` notification (storage crossed 80 % or 90 % of its budget).

Units follow the metrics: seconds and bytes. Everything here is built by ``app/metrics``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.models import GcReport
from retrace.engine.store.events import RestoreReason

AlertLevel = Literal["ok", "warning", "urgent"]


class MetricsSettings(CamelModel):
    """``retrace.metrics.*`` settings."""

    port: int = Field(default=0, ge=0, le=65535)
    """Serve ``/metrics`` on 127.0.0.1 at this port for a Prometheus scraper (0: off)."""


class MetricsGetParams(CamelModel):
    text: bool = True
    """Include the Prometheus text exposition (``text``)."""


class StoragePoint(CamelModel):
    ts: float
    """Seconds since the epoch."""
    bytes: int


class StorageView(CamelModel):
    used_bytes: int
    budget_bytes: int
    """Retention's ``maxBytes``."""
    ratio: float
    alert: AlertLevel
    by_kind: dict[str, int]
    """``blobs`` (loose), ``packs``, ``journals``, ``other``."""
    series: list[StoragePoint] = Field(default_factory=list)
    """Storage over time (at most one point a minute)."""


class CheckpointCounts(CamelModel):
    attempts: int = 0
    successes: int = 0
    failures: int = 0
    success_ratio: float | None = None
    """successes / attempts (``None`` before the first attempt)."""
    by_kind: dict[str, int] = Field(default_factory=dict)


class SlowCheckpoint(CamelModel):
    checkpoint_id: str
    session_id: str
    kind: str
    capture_seconds: float


class RemoteLag(CamelModel):
    remote: str
    seconds_since_push: float | None
    """``None``: never pushed."""
    pending_bytes: int


class AutoCleanupView(CamelModel):
    """What the automatic cleanup (retention at start-up and when idle) did, in total."""

    runs: int = 0
    checkpoints_dropped: int = 0
    subagent_stores_dropped: int = 0
    bytes_freed: int = 0


class MetricsSnapshot(CamelModel):
    workspace: str
    text: str = ""
    """The Prometheus text exposition (format 0.0.4) of the same numbers."""
    storage: StorageView
    checkpoints: CheckpointCounts
    capture_seconds: list[float] = Field(default_factory=list)
    """Capture latency samples, oldest first (the last 1000)."""
    restore_seconds: list[float] = Field(default_factory=list)
    """Restore latency samples, oldest first (the last 1000)."""
    restores_by_mode: dict[str, int] = Field(default_factory=dict)
    restores_by_reason: dict[str, int] = Field(default_factory=dict)
    """Applied restores by the reason given (``none``: no reason given)."""
    conflicts_by_resolution: dict[str, int] = Field(default_factory=dict)
    checkpoints_per_turn: list[int] = Field(default_factory=list)
    slowest: list[SlowCheckpoint] = Field(default_factory=list)
    lock_refusals: int = 0
    subagent_peak_rss_bytes: float | None = None
    remotes: list[RemoteLag] = Field(default_factory=list)
    auto_cleanup: AutoCleanupView = Field(default_factory=AutoCleanupView)
    """The automatic cleanup's runs and what they freed (kept across restarts)."""


class RestoreReasonParams(CamelModel):
    checkpoint_id: str
    """The restore's own checkpoint (``outcome.checkpoint.id``); for a conversation-only
    restore, its target."""
    reason: RestoreReason
    mode: Literal["code", "conversation", "both"] | None = None


class RestoreReasonResult(CamelModel):
    checkpoint_id: str
    reason: RestoreReason


class StorageAlert(CamelModel):
    """Storage rose into ``level`` (sent once per crossing)."""

    level: Literal["warning", "urgent"]
    used_bytes: int
    budget_bytes: int
    ratio: float
    message: str


class StoreGcResult(CamelModel):
    report: GcReport
