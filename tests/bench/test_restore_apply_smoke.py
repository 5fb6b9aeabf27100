"""``bench.restore_apply`` at a tiny size (correctness only, never speed; the figures come from
the real command, see bench/README.md)."""

from __future__ import annotations

from bench.restore_apply import measure


def test_restore_apply_bench_runs() -> None:
    result = measure(files=30, rounds=2, store_parent=None)
    assert result["median_ms"] > 0 and result["p90_ms"] >= 0
