"""The health view builder (pure): buckets, percentiles, targets, labels, empty stores."""

from __future__ import annotations

import json
import math

import pytest

from retrace.app.metrics.health import (
    CAPTURE_EDGES,
    RESTORE_EDGES,
    build_health,
    histogram,
    seconds_text,
)
from retrace.protocol.metrics import (
    CheckpointCounts,
    MetricsSnapshot,
    SlowCheckpoint,
    StoragePoint,
    StorageView,
)

MIB = 1024 * 1024


def snap(**kw: object) -> MetricsSnapshot:
    storage = kw.pop("storage", None) or StorageView(
        used_bytes=0, budget_bytes=100 * MIB, ratio=0.0, alert="ok", by_kind={}, series=[]
    )
    return MetricsSnapshot.model_validate(
        {"workspace": "/w", "storage": storage, "checkpoints": CheckpointCounts(), **kw}
    )


def no_nan(value: object) -> bool:
    if isinstance(value, float):
        return not math.isnan(value) and not math.isinf(value)
    if isinstance(value, dict):
        return all(no_nan(v) for v in value.values())
    if isinstance(value, list):
        return all(no_nan(v) for v in value)
    return True


def test_empty_store_is_empty_with_no_nan_and_unknown_targets() -> None:
    h = build_health(snap())
    assert h.empty
    assert h.success.ratio is None and h.success.met is None
    assert h.restore.samples == 0 and h.restore.p95_seconds is None
    assert [t.met for t in h.restore.targets] == [None, None]
    assert [b.count for b in h.capture.buckets] == [0] * (len(CAPTURE_EDGES) + 1)
    assert [r.count for r in h.restores_by_reason] == [0] * 6
    assert h.slowest == [] and h.checkpoints_per_turn_p50 is None
    dumped = h.model_dump(mode="json")
    assert no_nan(dumped)
    json.dumps(dumped, allow_nan=False)  # strict JSON: a NaN would raise


@pytest.mark.parametrize(
    ("by_kind", "failures", "modes", "empty"),
    [
        ({}, 0, {}, True),
        ({"baseline": 1}, 0, {}, True),  # a fresh workspace: only its baseline
        ({"baseline": 1, "tool": 1}, 0, {}, False),
        ({"baseline": 1}, 1, {}, False),  # a failed checkpoint is news
        ({"baseline": 1}, 0, {"conversation": 1}, False),
    ],
)
def test_empty_means_nothing_but_baselines(
    by_kind: dict[str, int], failures: int, modes: dict[str, int], empty: bool
) -> None:
    attempts = sum(by_kind.values()) + failures
    counts = CheckpointCounts(
        attempts=attempts, successes=attempts - failures, failures=failures, by_kind=by_kind
    )
    assert build_health(snap(checkpoints=counts, restores_by_mode=modes)).empty is empty


def test_one_sample_is_every_percentile() -> None:
    h = build_health(snap(restore_seconds=[0.3], capture_seconds=[0.02], restores_by_mode={"code": 1}))
    assert not h.empty
    assert (h.restore.p50_seconds, h.restore.p95_seconds, h.restore.p99_seconds) == (0.3, 0.3, 0.3)
    assert [(t.quantile, t.limit_seconds, t.met) for t in h.restore.targets] == [
        ("p95", 2.0, True),
        ("p99", 5.0, True),
    ]
    assert sum(b.count for b in h.restore.buckets) == 1
    assert next(b for b in h.capture.buckets if b.count).label == "10–25 ms"
    assert [b.label for b in h.restore.buckets][4:7] == ["500 ms–1 s", "1–2 s", "2–5 s"]


@pytest.mark.parametrize(
    ("samples", "p95_met", "p99_met"),
    [
        ([0.1] * 100, True, True),
        ([0.1] * 90 + [3.0] * 10, False, True),  # p95 lands among the 3 s restores
        ([0.1] * 98 + [6.0] * 2, True, False),  # p95 fast, p99 over 5 s
        ([2.0] * 100, False, True),  # exactly 2 s is not under 2 s
        ([9.0] * 100, False, False),
    ],
)
def test_restore_targets(samples: list[float], p95_met: bool, p99_met: bool) -> None:
    h = build_health(snap(restore_seconds=samples))
    assert [t.met for t in h.restore.targets] == [p95_met, p99_met]


def test_percentiles_interpolate_as_the_engine_does() -> None:
    h = build_health(snap(capture_seconds=[float(i) for i in range(1, 101)]))
    assert h.capture.p50_seconds == pytest.approx(50.5)
    assert h.capture.p95_seconds == pytest.approx(95.05)
    assert h.capture.p99_seconds == pytest.approx(99.01)


@pytest.mark.parametrize(
    ("attempts", "failures", "ratio", "met"),
    [(0, 0, None, None), (1000, 0, 1.0, True), (1000, 1, 0.999, True), (1000, 2, 0.998, False)],
)
def test_success_rate_against_target(
    attempts: int, failures: int, ratio: float | None, met: bool | None
) -> None:
    counts = CheckpointCounts(
        attempts=attempts,
        successes=attempts - failures,
        failures=failures,
        success_ratio=(attempts - failures) / attempts if attempts else None,
    )
    h = build_health(snap(checkpoints=counts))
    assert h.success.target == 0.999
    assert h.success.ratio == (pytest.approx(ratio) if ratio is not None else None)
    assert h.success.met is met


@pytest.mark.parametrize(
    ("used", "alert"),
    [(79, "ok"), (80, "warning"), (89, "warning"), (90, "urgent"), (120, "urgent")],
)
def test_storage_thresholds_and_alert(used: int, alert: str) -> None:
    """The lines sit at 80 % and 90 % of the budget; the percent shown rounds down."""
    storage = StorageView(
        used_bytes=used * MIB,
        budget_bytes=100 * MIB,
        ratio=used / 100,
        alert=alert,
        by_kind={"blobs": used * MIB},
        series=[StoragePoint(ts=1.0, bytes=MIB), StoragePoint(ts=61.0, bytes=used * MIB)],
    )
    h = build_health(snap(storage=storage))
    s = h.storage
    assert (s.warning_bytes, s.urgent_bytes, s.budget_bytes) == (80 * MIB, 90 * MIB, 100 * MIB)
    assert s.alert == alert and s.used_bytes == used * MIB
    assert [p.bytes for p in s.points] == [MIB, used * MIB]
    assert s.percent_text == f"{used} %"


def test_reasons_in_fixed_order_with_labels_and_zeros() -> None:
    h = build_health(snap(restores_by_reason={"none": 2, "brokeTests": 3, "offTrack": 1}))
    assert [(r.label, r.count) for r in h.restores_by_reason] == [
        ("Wrong approach", 0),
        ("Broke tests", 3),
        ("Unwanted file changes", 0),
        ("Conversation went off track", 1),
        ("Other", 0),
        ("No reason given", 2),
    ]


def test_modes_and_conflicts_labelled_unknown_keys_kept() -> None:
    h = build_health(
        snap(restores_by_mode={"both": 1, "code": 2}, conflicts_by_resolution={"merge": 1, "failed": 2})
    )
    assert [(r.key, r.count) for r in h.restores_by_mode] == [
        ("code", 2),
        ("conversation", 0),
        ("both", 1),
        ("hunk", 0),
    ]
    assert [(r.label, r.count) for r in h.conflicts_by_resolution] == [("Merged", 1), ("failed", 2)]


def test_slowest_rows_are_labelled_slowest_first() -> None:
    slow = [
        SlowCheckpoint(checkpoint_id="a", session_id="s", kind="tool", capture_seconds=0.25),
        SlowCheckpoint(checkpoint_id="b", session_id="s", kind="external", capture_seconds=2.5),
    ]
    h = build_health(snap(slowest=slow, checkpoints_per_turn=[1, 3, 5]))
    assert [(r.checkpoint_id, r.label) for r in h.slowest] == [
        ("b", "External change · 2.5 s"),
        ("a", "Tool call · 250 ms"),
    ]
    assert (h.slowest[0].kind_label, h.slowest[0].seconds_text) == ("External change", "2.5 s")
    assert h.checkpoints_per_turn_p50 == 3.0


@pytest.mark.parametrize(
    ("samples", "counts"),
    [
        ([], [0, 0, 0]),
        ([0.0, 1.0], [2, 0, 0]),  # edges are inclusive upper bounds
        ([1.5, 2.0, 2.5, 99.0], [0, 2, 2]),
    ],
)
def test_histogram_buckets(samples: list[float], counts: list[int]) -> None:
    buckets = histogram(samples, (1.0, 2.0))
    assert [b.count for b in buckets] == counts
    assert [(b.low, b.high, b.label) for b in buckets] == [
        (0.0, 1.0, "≤ 1 s"),
        (1.0, 2.0, "1–2 s"),
        (2.0, None, "> 2 s"),
    ]


def test_restore_edges_hold_the_targets() -> None:
    assert 2.0 in RESTORE_EDGES and 5.0 in RESTORE_EDGES


@pytest.mark.parametrize(
    ("s", "text"), [(0.0005, "0.5 ms"), (0.004, "4 ms"), (0.85, "850 ms"), (2.34, "2.3 s"), (40.2, "40 s")]
)
def test_seconds_text(s: float, text: str) -> None:
    assert seconds_text(s) == text


def test_words_for_the_panel() -> None:
    empty = build_health(snap())
    assert empty.restore.summary == "No samples yet" and empty.success.text == "No checkpoint yet"
    assert [t.text for t in empty.restore.targets] == [
        "p95 no samples (target < 2.0 s)",
        "p99 no samples (target < 5.0 s)",
    ]
    storage = StorageView(
        used_bytes=87 * MIB, budget_bytes=100 * MIB, ratio=0.87, alert="warning", by_kind={}, series=[]
    )
    counts = CheckpointCounts(attempts=2000, successes=1999, failures=1, success_ratio=0.9995)
    h = build_health(snap(storage=storage, checkpoints=counts, restore_seconds=[0.04, 1.5], lock_refusals=2))
    assert h.storage.summary == "87.0 MiB of 100.0 MiB (87 %)"
    assert (h.success.value_text, h.success.text) == ("99.95 %", "2000 attempts, 1 failed (target 99.9 %)")
    assert [(t.value_text, t.target_text) for t in h.restore.targets] == [
        ("1.4 s", "target < 2.0 s"),
        ("1.5 s", "target < 5.0 s"),
    ]
    assert h.storage.percent_text == "87 %"
    assert h.restore.summary == "p50 770 ms · p95 1.4 s · p99 1.5 s (2 samples)"
    facts = {f.label: f.value for f in h.facts}
    assert facts["Store lock refusals"] == "2" and facts["Subagent peak memory"] == "not measured"
    assert facts["Restores by mode"] == "Code 0 · Conversation 0 · Code and conversation 0 · One hunk 0"


@pytest.mark.parametrize(
    ("series", "now", "expected"),
    [
        # One recorded point: the current measurement is added, so the line (and the budget and
        # threshold lines beside it) span two points.
        ([(1000.0, 10)], 1030.0, [(1000.0, 10), (1030.0, 42)]),
        # Nothing recorded yet: the current measurement alone.
        ([], 1030.0, [(1030.0, 42)]),
        # The newest point is the current measurement already (same time): not twice.
        ([(1000.0, 10), (1030.0, 42)], 1030.0, [(1000.0, 10), (1030.0, 42)]),
        # No clock given: the recorded series as it is.
        ([(1000.0, 10)], None, [(1000.0, 10)]),
    ],
)
def test_storage_line_ends_at_the_current_measurement(
    series: list[tuple[float, int]], now: float | None, expected: list[tuple[float, int]]
) -> None:
    storage = StorageView(
        used_bytes=42,
        budget_bytes=100,
        ratio=0.42,
        alert="ok",
        by_kind={},
        series=[StoragePoint(ts=t, bytes=b) for t, b in series],
    )
    h = build_health(snap(storage=storage), now=now)
    assert [(p.ts, p.bytes) for p in h.storage.points] == expected
