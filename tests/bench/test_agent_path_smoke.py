"""Smoke test of ``python -m bench.agent_path`` at a tiny size: it runs and times every call
(correctness only, never speed; the figures come from the real command, see bench/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.agent_path import main


def test_the_standalone_agent_path_times_every_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    argv = ["--files=120", "--checkpoints=3", "--calls=4", f"--work={work}"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "now: 4 calls" in out
    assert (work / "tpl-120-3-1" / "done").exists()  # the store is made once, reused by later runs
