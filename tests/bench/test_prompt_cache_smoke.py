"""Smoke test of ``python -m bench.prompt_cache`` at a tiny size: the three variants run, caching
saves input cost, and a rewind reads the cached conversation prefix (correctness only; the
figures come from the real command, see bench/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.prompt_cache import main


def test_the_prompt_cache_benchmark_runs_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.md"
    argv = ["--calls=12", "--turn-calls=4", "--files=12", f"--work={tmp_path / 'work'}", f"--out={out}"]
    assert main(argv) == 0
    report = out.read_text()
    assert report == capsys.readouterr().out.rstrip("\n") + "\n"
    rows = {line.split("|")[1].strip(): line for line in report.splitlines() if line.startswith("| ")}
    assert "−" in rows["cache"] and "−" in rows["cache + rewinds"]
    assert "read the cached conversation prefix in 1 of 1" in report
