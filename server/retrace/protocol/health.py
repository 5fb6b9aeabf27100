"""The health view on the wire: ``retrace/health/get`` answers a :class:`HealthView`, the metrics
snapshot made ready to draw (built by ``app/metrics/health.py``; the extension only renders it).

Everything a chart needs is here already computed: the storage series with its budget and the
80 % / 90 % lines, latency histograms (bucket edges and counts) with p50/p95/p99 against the
targets, the checkpoint success rate against its target, restores by reason with human labels
in a fixed order, and the slowest checkpoints with a label each. Units: seconds and bytes.
"""

from __future__ import annotations

from pydantic import Field

from retrace.camel import CamelModel
from retrace.protocol.metrics import AlertLevel, RemoteLag, StoragePoint


class StorageHealth(CamelModel):
    points: list[StoragePoint] = Field(default_factory=list)
    """Storage over time, oldest first (ends with the current measurement)."""
    used_bytes: int
    budget_bytes: int
    """Retention's ``maxBytes`` (0: no budget, no threshold lines)."""
    warning_bytes: int
    """80 % of the budget: the ``warning`` line."""
    urgent_bytes: int
    """90 % of the budget: the ``urgent`` line."""
    ratio: float
    alert: AlertLevel
    by_kind: dict[str, int] = Field(default_factory=dict)
    percent_text: str
    """The share of the budget used, in whole percents rounded down (``"87 %"``; ``"—"``: no budget)."""
    summary: str
    """In words: ``"1.3 MiB of 1.5 MiB (87 %)"``."""


class HistogramBucket(CamelModel):
    low: float
    """Lower edge in seconds (exclusive, except the first bucket's 0)."""
    high: float | None
    """Upper edge in seconds (inclusive); ``None``: unbounded (the last bucket)."""
    label: str
    """The bucket as a person reads it (``"50–100 ms"``, ``"> 30 s"``)."""
    count: int


class LatencyTarget(CamelModel):
    quantile: str
    """``p95`` or ``p99``."""
    limit_seconds: float
    """The target: the quantile must stay under this."""
    value_seconds: float | None
    """``None``: no sample yet."""
    met: bool | None
    """``None``: no sample yet."""
    value_text: str
    """The value in words (``"1.2 s"``; ``"—"``: no sample yet)."""
    target_text: str
    """``"target < 2.0 s"``."""
    text: str
    """In words: ``"p95 1.2 s (target < 2.0 s)"``."""


class LatencyHealth(CamelModel):
    title: str
    samples: int
    buckets: list[HistogramBucket] = Field(default_factory=list)
    p50_seconds: float | None = None
    p95_seconds: float | None = None
    p99_seconds: float | None = None
    targets: list[LatencyTarget] = Field(default_factory=list)
    summary: str
    """In words: ``"p50 12 ms · p95 40 ms · p99 80 ms (42 samples)"`` or ``"No samples yet"``."""


class SuccessRate(CamelModel):
    attempts: int
    failures: int
    ratio: float | None
    """successes / attempts; ``None`` before the first attempt."""
    target: float
    met: bool | None
    """``None`` before the first attempt."""
    value_text: str
    """``"99.95 %"`` (``"—"`` before the first attempt)."""
    text: str
    """In words: ``"2000 attempts, 1 failed (target 99.9 %)"``."""


class LabelledCount(CamelModel):
    key: str
    label: str
    count: int


class SlowRow(CamelModel):
    checkpoint_id: str
    session_id: str
    kind: str
    seconds: float
    kind_label: str
    """The kind in words (``"Tool call"``)."""
    seconds_text: str
    """The capture time in words (``"250 ms"``)."""
    label: str
    """Both: ``"Tool call · 250 ms"``."""


class Fact(CamelModel):
    """One more number, in words (the panel lists them)."""

    label: str
    value: str


class HealthView(CamelModel):
    workspace: str
    empty: bool
    """No checkpoint yet but the session baselines, none failed and no restore: a client shows a
    friendly empty state."""
    storage: StorageHealth
    capture: LatencyHealth
    restore: LatencyHealth
    success: SuccessRate
    restores_by_reason: list[LabelledCount] = Field(default_factory=list)
    """Every reason in a fixed order (zeros kept), "No reason given" last."""
    restores_by_mode: list[LabelledCount] = Field(default_factory=list)
    conflicts_by_resolution: list[LabelledCount] = Field(default_factory=list)
    slowest: list[SlowRow] = Field(default_factory=list)
    """Slowest captures first."""
    checkpoints_per_turn_p50: float | None = None
    lock_refusals: int = 0
    subagent_peak_rss_bytes: float | None = None
    remotes: list[RemoteLag] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    """The other numbers in words: restores by mode, conflicts, checkpoints per turn, lock
    refusals, subagent peak memory, each remote's sync lag."""
