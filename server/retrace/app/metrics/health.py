"""The health view: a :class:`MetricsSnapshot` made ready to draw (pure, table-tested).

:func:`build_health` owns every decision a chart would otherwise make: the latency buckets (the
Prometheus histogram's log-ish edges in seconds, counts per bucket, not cumulative), the
percentiles (the engine's one definition, :func:`retrace.engine.line_stats.percentile`: linear
interpolation between the closest ranks), the targets and whether they are met (restore
p95 < 2 s, p99 < 5 s; checkpoint creation success ≥ 99.9 %), the storage threshold lines (80 %
warning, 90 % urgent), the human labels and their fixed order, and every number in words. No
sample means ``None``, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

from retrace.app.metrics.exposition import CAPTURE_BUCKETS, RESTORE_BUCKETS
from retrace.app.metrics.storage import URGENT_RATIO, WARNING_RATIO
from retrace.engine.line_stats import percentile
from retrace.protocol.health import (
    Fact,
    HealthView,
    HistogramBucket,
    LabelledCount,
    LatencyHealth,
    LatencyTarget,
    SlowRow,
    StorageHealth,
    SuccessRate,
)
from retrace.protocol.metrics import MetricsSnapshot, StoragePoint

CAPTURE_EDGES = CAPTURE_BUCKETS
"""Upper edges of the capture latency buckets (seconds), the Prometheus histogram's; one more
bucket holds the rest."""
RESTORE_EDGES = RESTORE_BUCKETS
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
MODES = (
    ("code", "Code"),
    ("conversation", "Conversation"),
    ("both", "Code and conversation"),
    ("hunk", "One hunk"),
)
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
    "baseline": "Starting point",
}


def seconds_text(s: float) -> str:
    """A duration as a person reads it: ``"850 ms"``, ``"2.3 s"``, ``"40 s"``."""
    if s < 1:
        ms = s * 1000
        return f"{ms:.0f} ms" if ms >= 10 or ms == int(ms) else f"{ms:.1f} ms"
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def bytes_text(n: float) -> str:
    """A size as a person reads it: ``"512 B"``, ``"12.0 KiB"``, ``"1.3 MiB"``, ``"2.0 GiB"``."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _percent(ratio: float) -> str:
    text = f"{100 * ratio:.2f}".rstrip("0").rstrip(".")
    return f"{text} %"


def _edge_text(s: float) -> str:
    return f"{s * 1000:g} ms" if s < 1 else f"{s:g} s"


def _range_text(low: float, high: float) -> str:
    """``"5–10 ms"``, ``"500 ms–1 s"``, ``"2–5 s"``: the unit said once when both ends share it."""
    if (low < 1) == (high < 1):
        number = f"{low * 1000:g}" if low < 1 else f"{low:g}"
        return f"{number}–{_edge_text(high)}"
    return f"{_edge_text(low)}–{_edge_text(high)}"


def _storage_percent(ratio: float) -> str:
    """Whole percents, rounded down (79.6 % is not yet the 80 % line)."""
    return f"{math.floor(100 * ratio + 1e-9)} %"


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
            label = f"≤ {_edge_text(edges[i])}" if i == 0 else _range_text(low, edges[i])
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

    def target(name: str, p: float, limit: float) -> LatencyTarget:
        value = q(p)
        shown = "no samples" if value is None else seconds_text(value)
        return LatencyTarget(
            quantile=name,
            limit_seconds=limit,
            value_seconds=value,
            met=None if value is None else value < limit,
            value_text="—" if value is None else seconds_text(value),
            target_text=f"target < {seconds_text(limit)}",
            text=f"{name} {shown} (target < {seconds_text(limit)})",
        )

    p50, p95, p99 = q(0.5), q(0.95), q(0.99)
    summary = "No samples yet"
    if p50 is not None and p95 is not None and p99 is not None:
        plural = "" if len(ordered) == 1 else "s"
        summary = (
            f"p50 {seconds_text(p50)} · p95 {seconds_text(p95)} · p99 {seconds_text(p99)}"
            f" ({len(ordered)} sample{plural})"
        )
    return LatencyHealth(
        title=title,
        samples=len(ordered),
        buckets=histogram(ordered, edges),
        p50_seconds=p50,
        p95_seconds=p95,
        p99_seconds=p99,
        targets=[target(*t) for t in targets],
        summary=summary,
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


def _storage(m: MetricsSnapshot, now: float | None) -> StorageHealth:
    s = m.storage
    points = list(s.series)
    if now is not None and (not points or points[-1].ts < now):
        # The series keeps a point a minute at most; the line ends at what was measured now
        # (with one recorded point, the line and its threshold lines still span two).
        points.append(StoragePoint(ts=now, bytes=s.used_bytes))
    return StorageHealth(
        points=points,
        used_bytes=s.used_bytes,
        budget_bytes=s.budget_bytes,
        warning_bytes=int(s.budget_bytes * WARNING_RATIO),
        urgent_bytes=int(s.budget_bytes * URGENT_RATIO),
        ratio=s.ratio,
        alert=s.alert,
        by_kind=s.by_kind,
        percent_text=_storage_percent(s.ratio) if s.budget_bytes > 0 else "—",
        summary=(
            f"{bytes_text(s.used_bytes)} of {bytes_text(s.budget_bytes)} ({_storage_percent(s.ratio)})"
            if s.budget_bytes > 0
            else f"{bytes_text(s.used_bytes)} (no budget)"
        ),
    )


def _success(m: MetricsSnapshot) -> SuccessRate:
    c = m.checkpoints
    ratio = c.success_ratio
    text = "No checkpoint yet"
    if ratio is not None:
        failed = f", {c.failures} failed" if c.failures else ""
        text = f"{c.attempts} attempts{failed} (target {_percent(SUCCESS_TARGET)})"
    return SuccessRate(
        attempts=c.attempts,
        failures=c.failures,
        ratio=ratio,
        target=SUCCESS_TARGET,
        met=None if ratio is None else ratio >= SUCCESS_TARGET,
        value_text="—" if ratio is None else _percent(ratio),
        text=text,
    )


def _counts_text(rows: Sequence[LabelledCount]) -> str:
    return " · ".join(f"{r.label} {r.count}" for r in rows) or "none"


def _cleanups_text(m: MetricsSnapshot) -> str:
    a = m.auto_cleanup
    runs = f"{a.runs} run{'' if a.runs == 1 else 's'}"
    return f"{runs}, {a.checkpoints_dropped} checkpoints dropped, {bytes_text(a.bytes_freed)} freed"


def _facts(
    m: MetricsSnapshot, modes: Sequence[LabelledCount], conflicts: Sequence[LabelledCount]
) -> list[Fact]:
    per_turn = m.checkpoints_per_turn
    facts = [
        Fact(label="Restores by mode", value=_counts_text(modes)),
        Fact(label="Conflicts by resolution", value=_counts_text(conflicts)),
        Fact(
            label="Checkpoints per turn (median)",
            value=f"{median(per_turn):g} over {len(per_turn)} turns" if per_turn else "no turn yet",
        ),
        Fact(label="Store lock refusals", value=str(m.lock_refusals)),
        Fact(label="Automatic cleanups", value=_cleanups_text(m)),
        Fact(
            label="Subagent peak memory",
            value="not measured"
            if m.subagent_peak_rss_bytes is None
            else bytes_text(m.subagent_peak_rss_bytes),
        ),
    ]
    for r in m.remotes:
        since = (
            "never pushed"
            if r.seconds_since_push is None
            else f"pushed {seconds_text(r.seconds_since_push)} ago"
        )
        facts.append(
            Fact(label=f"Remote {r.remote}", value=f"{since}, {bytes_text(r.pending_bytes)} pending")
        )
    return facts


def _nothing_yet(m: MetricsSnapshot) -> bool:
    """Nothing to draw: no checkpoint but the session baselines, none failed, no restore."""
    c = m.checkpoints
    made = sum(n for kind, n in c.by_kind.items() if kind != "baseline")
    return made == 0 and c.failures == 0 and not m.restores_by_mode


def build_health(m: MetricsSnapshot, *, now: float | None = None) -> HealthView:
    """The health view of one metrics snapshot; ``now`` (seconds since the epoch): when its
    storage was measured, the storage line's last point."""
    modes = _labelled(MODES, m.restores_by_mode, keep_zeros=True)
    conflicts = _labelled(RESOLUTIONS, m.conflicts_by_resolution, keep_zeros=False)
    return HealthView(
        workspace=m.workspace,
        empty=_nothing_yet(m),
        storage=_storage(m, now),
        capture=latency("Capture latency", m.capture_seconds, CAPTURE_EDGES),
        restore=latency("Restore latency", m.restore_seconds, RESTORE_EDGES, RESTORE_TARGETS),
        success=_success(m),
        restores_by_reason=_labelled(REASONS, m.restores_by_reason, keep_zeros=True),
        restores_by_mode=modes,
        conflicts_by_resolution=conflicts,
        slowest=[
            SlowRow(
                checkpoint_id=s.checkpoint_id,
                session_id=s.session_id,
                kind=s.kind,
                seconds=s.capture_seconds,
                kind_label=KINDS.get(s.kind, s.kind),
                seconds_text=seconds_text(s.capture_seconds),
                label=f"{KINDS.get(s.kind, s.kind)} · {seconds_text(s.capture_seconds)}",
            )
            for s in sorted(m.slowest, key=lambda s: -s.capture_seconds)
        ],
        checkpoints_per_turn_p50=float(median(m.checkpoints_per_turn)) if m.checkpoints_per_turn else None,
        lock_refusals=m.lock_refusals,
        subagent_peak_rss_bytes=m.subagent_peak_rss_bytes,
        remotes=m.remotes,
        facts=_facts(m, modes, conflicts),
    )
