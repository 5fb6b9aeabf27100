"""The Prometheus form of :class:`~retrace.app.metrics.collect.Collected`, through the official
``prometheus_client`` (a custom collector on a registry of its own; imported only here, on use).

Names follow the Prometheus conventions: the ``retrace_`` prefix, base units in the name
(``_seconds``, ``_bytes``), ``_total`` on counters, a ``_ratio`` for fractions. Counters carry
``session`` (per session) where the journals know it; the workspace is a label of
``retrace_workspace_info`` (one server or CLI serves one workspace).

| name | type | labels |
|---|---|---|
| ``retrace_workspace_info`` | gauge (1) | workspace |
| ``retrace_storage_bytes`` | gauge | kind: blobs, packs, journals, other, subagents |
| ``retrace_storage_used_bytes`` / ``_budget_bytes`` / ``_usage_ratio`` | gauge | |
| ``retrace_storage_alert`` | gauge (1 for the current state) | state: ok, warning, urgent |
| ``retrace_checkpoint_attempts_total`` | counter | session, kind |
| ``retrace_checkpoints_total`` | counter (successes) | session, kind |
| ``retrace_checkpoint_failures_total`` | counter | session, kind |
| ``retrace_capture_duration_seconds`` | histogram | |
| ``retrace_checkpoints_per_turn`` | histogram | |
| ``retrace_restore_duration_seconds`` | histogram | |
| ``retrace_restores_total`` | counter | session, mode, outcome, reason |
| ``retrace_restore_conflicts_total`` | counter | resolution |
| ``retrace_store_lock_refusals_total`` | counter | |
| ``retrace_subagent_peak_rss_bytes`` | gauge (when measured) | |
| ``retrace_auto_cleanup_runs_total`` / ``_dropped_checkpoints_total`` / ``_freed_bytes_total`` | counter | |
| ``retrace_remote_last_push_age_seconds`` / ``retrace_remote_pending_bytes`` | gauge | remote |
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from retrace.app.metrics.storage import LEVELS, alert_level

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

    from retrace.app.metrics.collected import Collected

CAPTURE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Captures take about a millisecond at 50k files, so the first bounds are sub-millisecond."""
RESTORE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""2 s and 5 s are bucket bounds, so P95 < 2 s and P99 < 5 s read straight off the buckets."""
PER_TURN_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def histogram_buckets(samples: Iterable[float], bounds: Sequence[float]) -> list[tuple[str, float]]:
    """Cumulative ``(le, count)`` pairs, ``+Inf`` last (pure)."""
    values = sorted(samples)
    out: list[tuple[str, float]] = []
    i = 0
    for bound in bounds:
        while i < len(values) and values[i] <= bound:
            i += 1
        out.append((_le(bound), float(i)))
    out.append(("+Inf", float(len(values))))
    return out


def _le(bound: float) -> str:
    return repr(float(bound))


class StoreCollector:
    """A ``prometheus_client`` collector over one :class:`Collected`."""

    def __init__(self, collected: Collected) -> None:
        self.c = collected

    def collect(self) -> Iterator[Metric]:
        yield from self._storage()
        yield from self._checkpoints()
        yield from self._restores()
        yield from self._other()

    def _storage(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        c = self.c
        info = GaugeMetricFamily(
            "retrace_workspace_info", "The workspace these metrics are of.", labels=["workspace"]
        )
        info.add_metric([c.workspace], 1.0)
        yield info
        by_kind = GaugeMetricFamily(
            "retrace_storage_bytes", "Checkpoint storage on disk by kind.", labels=["kind"]
        )
        for kind, n in c.usage.by_kind().items():
            by_kind.add_metric([kind], float(n))
        yield by_kind
        used, budget = c.usage.total, c.budget_bytes
        yield GaugeMetricFamily("retrace_storage_used_bytes", "Checkpoint storage used.", value=float(used))
        yield GaugeMetricFamily(
            "retrace_storage_budget_bytes",
            "Checkpoint storage budget (retention maxBytes).",
            value=float(budget),
        )
        yield GaugeMetricFamily(
            "retrace_storage_usage_ratio",
            "Storage used over its budget.",
            value=used / budget if budget > 0 else 0.0,
        )
        level = alert_level(used, budget)
        alert = GaugeMetricFamily(
            "retrace_storage_alert",
            "Storage alert state (warning >= 80 %, urgent >= 90 %).",
            labels=["state"],
        )
        for state in LEVELS:
            alert.add_metric([state], 1.0 if state == level else 0.0)
        yield alert

    def _checkpoints(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        f = self.c.facts
        attempts = CounterMetricFamily(
            "retrace_checkpoint_attempts",
            "Checkpoints tried (recorded or failed).",
            labels=["session", "kind"],
        )
        ok = CounterMetricFamily("retrace_checkpoints", "Checkpoints recorded.", labels=["session", "kind"])
        failed = CounterMetricFamily(
            "retrace_checkpoint_failures",
            "Checkpoints that could not be recorded.",
            labels=["session", "kind"],
        )
        for key in sorted(set(f.checkpoints) | set(f.failures)):
            attempts.add_metric(list(key), float(f.checkpoints[key] + f.failures[key]))
            ok.add_metric(list(key), float(f.checkpoints[key]))
            failed.add_metric(list(key), float(f.failures[key]))
        yield from (attempts, ok, failed)
        yield _histogram(
            HistogramMetricFamily,
            "retrace_capture_duration_seconds",
            "Capture latency of each checkpoint (baselines left out).",
            f.capture_s,
            CAPTURE_BUCKETS,
        )
        yield _histogram(
            HistogramMetricFamily,
            "retrace_checkpoints_per_turn",
            "Agent checkpoints (tool and background) per turn.",
            [float(n) for n in f.per_turn.values()],
            PER_TURN_BUCKETS,
        )

    def _restores(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        f = self.c.facts
        yield _histogram(
            HistogramMetricFamily,
            "retrace_restore_duration_seconds",
            "Latency of restores that changed (or tried to change) the workspace.",
            f.restore_latencies(),
            RESTORE_BUCKETS,
        )
        counts: Counter[tuple[str, str, str, str]] = Counter()
        conflicts: Counter[str] = Counter()
        for r in f.restores:
            counts[(r.session, r.mode, r.outcome, f.reason_of(r))] += 1
            for resolution, n in r.conflicts:
                conflicts[resolution] += n
        restores = CounterMetricFamily(
            "retrace_restores",
            "Restores by mode, outcome and the reason the user gave (none: no reason).",
            labels=["session", "mode", "outcome", "reason"],
        )
        for key in sorted(counts):
            restores.add_metric(list(key), float(counts[key]))
        yield restores
        by_resolution = CounterMetricFamily(
            "retrace_restore_conflicts", "Conflicting files of restores by resolution.", labels=["resolution"]
        )
        for resolution in sorted(conflicts):
            by_resolution.add_metric([resolution], float(conflicts[resolution]))
        yield by_resolution

    def _other(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        c = self.c
        yield CounterMetricFamily(
            "retrace_store_lock_refusals",
            "Times a process was refused the store's lock.",
            value=c.lock_refusals,
        )
        yield CounterMetricFamily(
            "retrace_auto_cleanup_runs",
            "Automatic cleanups (retention at start-up and when idle).",
            value=c.cleanups.runs,
        )
        yield CounterMetricFamily(
            "retrace_auto_cleanup_dropped_checkpoints",
            "Checkpoints the automatic cleanups dropped.",
            value=c.cleanups.checkpoints_dropped,
        )
        yield CounterMetricFamily(
            "retrace_auto_cleanup_freed_bytes",
            "Bytes the automatic cleanups freed.",
            value=c.cleanups.bytes_freed,
        )
        if c.facts.subagent_peak_rss_bytes is not None:
            yield GaugeMetricFamily(
                "retrace_subagent_peak_rss_bytes",
                "Peak resident memory of the server process at a subagent's end (children run inside it).",
                value=c.facts.subagent_peak_rss_bytes,
            )
        if c.remotes:
            age = GaugeMetricFamily(
                "retrace_remote_last_push_age_seconds",
                "Seconds since the last successful push.",
                labels=["remote"],
            )
            pending = GaugeMetricFamily(
                "retrace_remote_pending_bytes", "Bytes not pushed yet.", labels=["remote"]
            )
            for lag in c.remotes:
                if lag.seconds_since_push is not None:
                    age.add_metric([lag.remote], lag.seconds_since_push)
                pending.add_metric([lag.remote], float(lag.pending_bytes))
            yield from (age, pending)


def _histogram(
    family: type, name: str, doc: str, samples: Sequence[float], bounds: Sequence[float]
) -> Metric:
    metric: Metric = family(
        name, doc, buckets=histogram_buckets(samples, bounds), sum_value=float(sum(samples))
    )
    return metric


def registry(collected: Collected) -> CollectorRegistry:
    from prometheus_client import CollectorRegistry

    reg = CollectorRegistry(auto_describe=False)
    reg.register(StoreCollector(collected))
    return reg


def prometheus_text(collected: Collected) -> str:
    """The text exposition format (0.0.4) of ``collected``."""
    from prometheus_client import generate_latest

    return generate_latest(registry(collected)).decode("utf-8")
