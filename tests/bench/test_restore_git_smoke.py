"""``bench.restore_git`` at a tiny size (correctness only, never speed: the figures come from the
real command, see bench/RESULTS_restore.md). Every restore in it is checked byte for byte against
git's reset of the same change, so this also pins that the two sides agree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bench.restore_git import CASES, run, snapshot


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("watcher", [True, False])
def test_restore_git_bench_runs_byte_exact(watcher: bool) -> None:
    result = run(files=20, rounds=1, history=52, watcher=watcher)
    counts = result["counts"]
    assert isinstance(counts, dict) and set(counts) == set(CASES)
    assert sum(counts["first"].values()) == 51  # every step of the history is undone
    cases = result["cases"]
    assert isinstance(cases, dict)
    for label in CASES:
        assert cases[label]["retrace_ms"] > 0 and cases[label]["git_ms"] > 0


def test_snapshot_tells_contents_and_modes_apart(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x")
    one = snapshot(tmp_path)
    (tmp_path / "a" / "f").chmod(0o755)
    two = snapshot(tmp_path)
    (tmp_path / "a" / "f").write_bytes(b"y")
    assert len({repr(one), repr(two), repr(snapshot(tmp_path))}) == 3
