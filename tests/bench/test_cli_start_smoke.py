"""Smoke test of ``bench/cli_start.py`` at a tiny size: correctness only, never speed.

Builds the workspaces and stores, runs one counted round of every command through the real
``python -m retrace`` and checks what the report needs: every command measured, every checkpoint
round recorded a checkpoint of its one changed file, the table renders with a ratio per row. The
figures come from ``python -m bench.cli_start`` (bench/RESULTS_cli.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench.cli_start import Variant, build, measure, render

pytestmark = pytest.mark.slow


def test_one_tiny_round_measures_every_command_and_records_the_checkpoints(tmp_path: Path) -> None:
    variant = Variant("after", None, *(tmp_path / p for p in ("ws", "store", "small-ws", "small-store")))
    build(variant, 40, 10)
    base, results = measure([variant], rounds=2)
    assert len(base.cpu) == 2 and all(c > 0 for c in base.cpu)
    labels = {label for _, label in results}
    assert labels == {
        "retrace --version",
        "retrace log (small store)",
        "retrace stats (small store)",
        "retrace checkpoint (1 changed file)",
    }
    assert all(len(s.cpu) == 2 and len(s.wall) == 2 for s in results.values())
    report = render(base, results, rounds=2, files=40, load="load test")
    assert report.count("\n| `retrace") == len(labels) and "×" in report

    log = subprocess.run(
        [
            sys.executable,
            "-m",
            "retrace",
            "log",
            "--json",
            "--workspace",
            str(variant.big_ws),
            "--store",
            str(variant.big_store),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=variant.env(),
    )
    checkpoints = json.loads(log.stdout)
    # The baseline, then one checkpoint per round (warm-up included), each of one changed file.
    assert len(checkpoints) == 1 + 3
    assert [len(cp["files"]) for cp in checkpoints[1:]] == [1, 1, 1]
