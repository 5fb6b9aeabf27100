"""``bench.fs_backends`` at a tiny size (correctness only, never speed; the figures come from the
real command, see bench/README.md)."""

from __future__ import annotations

from bench.fs_backends import STEPS, measure


def test_fs_backends_bench_runs() -> None:
    result = measure(files=20, rounds=2)
    medians = result["median_ms"]
    assert isinstance(medians, dict)
    assert set(medians) == {"posix", "portable"}
    assert all(medians[b][s] > 0 for b in medians for s in STEPS)
