"""Smoke tests of the remote benchmarks at a tiny size: they run and report every figure
(correctness only, never speed; the figures come from the real commands, see bench/RESULTS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.remote_latency import main as latency_main
from bench.remote_writers import main as writers_main

pytestmark = pytest.mark.slow


def test_remote_latency_reports_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "latency.md"
    argv = ["--files=60", "--calls=3", "--delay=0.2", f"--work={tmp_path / 'w'}", f"--out={out}"]
    assert latency_main(argv) == 0
    text = out.read_text()
    for scenario in ("no remote", "healthy", "slow", "down"):
        assert f"| {scenario} | 3 |" in text
    assert "Errors:" not in text


def test_remote_writers_reports_throughput_lag_and_costs(tmp_path: Path) -> None:
    out = tmp_path / "writers.md"
    argv = [
        "--writers=2",
        "--checkpoints=3",
        "--push-every=1",
        "--files=10",
        "--sessions=2,4",
        f"--work={tmp_path / 'w'}",
        f"--out={out}",
    ]
    assert writers_main(argv) == 0
    text = out.read_text()
    assert "objects uploaded" in text and "sync lag" in text
    assert ("| 2 |" in text and "| 4 |" in text) or "| 5 |" in text
