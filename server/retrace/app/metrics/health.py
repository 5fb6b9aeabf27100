"""The health view: a :class:`MetricsSnapshot` made ready to draw (pure, table-tested).

:func:`build_health` owns every decision a chart would otherwise make: the latency buckets
(log-ish edges in seconds, counts per bucket — not cumulative), the percentiles (the engine's
one definition, :func:`retrace.engine.stats.percentile`: linear interpolation between the
closest ranks), the targets and whether they are met (restore p95 < 2 s, p99 < 5 s; checkpoint
creation success ≥ 99.9 %), the storage threshold lines (80 % warning, 90 % urgent), the human
labels and their fixed order. No sample means ``None``, never NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from retrace.app.metrics.storage import URGENT_RATIO, WARNING_RATIO
from retrace.engine.stats import percentile
from retrace.protocol.health import (
    HealthView,
    HistogramBucket,
    LabelledCount,
    LatencyHealth,
    LatencyTarget,
    SlowRow,
    StorageHealth,
    SuccessRate,
)
from retrace.protocol.metrics import MetricsSnapshot

CAPTURE_EDGES = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Upper edges of the capture latency buckets (seconds); one more bucket holds the rest."""
RESTORE_EDGES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Upper edges of the restore latency buckets: 2 s and 5 s (the targets) are edges."""
RESTORE_TARGETS = (("p95", 0.95, 2.0), ("p99", 0.99, 5.0))
"""(name, quantile, limit in seconds): restore p95 under 2 s, p99 under 5 s."""
SUCCESS_TARGET = 0.999

REASONS = (
    ("wrongApproach", "Wrong approach"),
    ("brokeTests", "Broke tests"),
    ("unwantedChanges", "Unwanted file changes"),
    ("offTrack", "Conversation went off track"),
    ("other", "Other"),
    ("none", "No reason given"),
)
MODES = (("code", "Code"), ("conversation", "Conversation"), ("both", "Code and conversation"))
RESOLUTIONS = (
    ("overwrite", "Overwritten"),
    ("merge", "Merged"),
    ("skip", "Skipped"),
    ("unresolved", "Left unresolved"),
)
KINDS = {
    "tool": "Tool call",
    "external": "External change",
    "background": "Background command",
    "safety": "Safety capture",
    "restore": "Restore",
    "manual": "Manual mark",
    "summary": "Summary",
    "baseline": "Baseline",
}


def seconds_text(s: float) -> str:
    """A duration as a person reads it: ``"850 ms"``, ``"2.3 s"``, ``"40 s"``."""
    if s < 1:
        ms = s * 1000
        return f"{ms:.0f} ms" if ms >= 10 or ms == int(ms) else f"{ms:.1f} ms"
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def _edge_text(s: float) -> str:
    return f"{s * 1000:g} ms" if s < 1 else f"{s:g} s"


def histogram(samples: Sequence[float], edges: Sequence[float]) -> list[HistogramBucket]:
    """Counts per bucket: ``[0, e0]``, ``(e0, e1]``, …, ``(last, ∞)``."""
    counts = [0] * (len(edges) + 1)
    for s in samples:
        i = next((k for k, edge in enumerate(edges) if s <= edge), len(edges))
        counts[i] += 1
    out: list[HistogramBucket] = []
    low = 0.0
    for i, count in enumerate(counts):
        if i < len(edges):
            high: float | None = edges[i]
            label = f"≤ {_edge_text(edges[i])}" if i == 0 else f"{_edge_text(low)}–{_edge_text(edges[i])}"
        else:
            high, label = None, f"> {_edge_text(low)}"
        out.append(HistogramBucket(low=low, high=high, label=label, count=count))
        low = edges[i] if i < len(edges) else low
    return out


def latency(
    title: str,
    samples: Sequence[float],
    edges: Sequence[float],
    targets: Sequence[tuple[str, float, float]] = (),
) -> LatencyHealth:
    ordered = sorted(samples)

    def q(p: float) -> float | None:
        return round(percentile(ordered, p), 6) if ordered else None

    return LatencyHealth(
        title=title,
        samples=len(ordered),
        buckets=histogram(ordered, edges),
        p50_seconds=q(0.5),
        p95_seconds=q(0.95),
        p99_seconds=q(0.99),
        targets=[
            LatencyTarget(
                quantile=name,
                limit_seconds=limit,
                value_seconds=q(p),
                met=None if not ordered else percentile(ordered, p) < limit,
            )
            for name, p, limit in targets
        ],
    )


def _labelled(
    table: Sequence[tuple[str, str]], counts: dict[str, int], *, keep_zeros: bool
) -> list[LabelledCount]:
    """The table's keys in its order, then any unknown key (its own name as label)."""
    known = [LabelledCount(key=k, label=label, count=counts.get(k, 0)) for k, label in table]
    rows = known if keep_zeros else [r for r in known if r.count > 0]
    known_keys = {k for k, _ in table}
    extra = [LabelledCount(key=k, label=k, count=n) for k, n in sorted(counts.items()) if k not in known_keys]
    return rows + extra


def _storage(m: MetricsSnapshot) -> StorageHealth:
    s = m.storage
    return StorageHealth(
        points=list(s.series),
        used_bytes=s.used_bytes,
        budget_bytes=s.budget_bytes,
        warning_bytes=int(s.budget_bytes * WARNING_RATIO),
        urgent_bytes=int(s.budget_bytes * URGENT_RATIO),
        ratio=s.ratio,
        alert=s.alert,
        by_kind=s.by_kind,
    )


def build_health(m: MetricsSnapshot) -> HealthView:
    """The health view of one metrics snapshot."""
    c = m.checkpoints
    ratio = c.success_ratio
    restores = sum(m.restores_by_mode.values())
    return HealthView(
        workspace=m.workspace,
        empty=c.attempts == 0 and restores == 0,
        storage=_storage(m),
        capture=latency("Capture latency", m.capture_seconds, CAPTURE_EDGES),
        restore=latency("Restore latency", m.restore_seconds, RESTORE_EDGES, RESTORE_TARGETS),
        success=SuccessRate(
            attempts=c.attempts,
            failures=c.failures,
            ratio=ratio,
            target=SUCCESS_TARGET,
            met=None if ratio is None else ratio >= SUCCESS_TARGET,
        ),
        restores_by_reason=_labelled(REASONS, m.restores_by_reason, keep_zeros=True),
        restores_by_mode=_labelled(MODES, m.restores_by_mode, keep_zeros=True),
        conflicts_by_resolution=_labelled(RESOLUTIONS, m.conflicts_by_resolution, keep_zeros=False),
        slowest=[
            SlowRow(
                checkpoint_id=s.checkpoint_id,
                session_id=s.session_id,
                kind=s.kind,
                seconds=s.capture_seconds,
                label=f"{KINDS.get(s.kind, s.kind)} · {seconds_text(s.capture_seconds)}",
            )
            for s in sorted(m.slowest, key=lambda s: -s.capture_seconds)
        ],
        checkpoints_per_turn_p50=float(median(m.checkpoints_per_turn)) if m.checkpoints_per_turn else None,
        lock_refusals=m.lock_refusals,
        subagent_peak_rss_bytes=m.subagent_peak_rss_bytes,
        remotes=m.remotes,
    )
