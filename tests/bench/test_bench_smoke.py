"""Smoke test of the benchmark at a tiny size: correctness only, never speed.

Generator + trace + all three strategies (Retrace, shadow git, floor) on 200 files and 15 tool
calls: every restore must be byte-exact, all strategies must see identical trees, and the report
must render. The real figures come from ``python -m bench.run`` (see bench/RESULTS.md).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench.run import STRATEGIES, measure, render_report
from bench.trace import make_trace
from bench.tree import IgnoreRules, tree_digest, walk
from bench.workspace import generate

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the shadow-git baseline needs git")


def test_generator_is_deterministic_and_ignores_what_it_should(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", 200, seed=3)
    b = generate(tmp_path / "b", 200, seed=3)
    c = generate(tmp_path / "c", 200, seed=4)
    assert a.tracked_files == 200 and a.ignored_files > 0
    assert tree_digest(a.root) == tree_digest(b.root) != tree_digest(c.root)
    tracked = {rel for rel, _ in walk(a.root, IgnoreRules.for_workspace(a.root))}
    assert len(tracked) == 200
    assert not any(p.startswith(("node_modules/", "build/")) or p.endswith(".log") for p in tracked)
    assert (a.root / "node_modules").is_dir() and (a.root / "build").is_dir()
    steps = make_trace(a, 60, seed=3)
    assert [s.index for s in steps] == list(range(1, 61))
    assert sum(s.kind == "shell" for s in steps) == 9  # 15 %
    assert all(s.changed_paths for s in steps if s.kind == "edit")
    assert make_trace(b, 60, seed=3) == steps


def test_all_strategies_restore_byte_exact_on_the_same_trace(tmp_path: Path) -> None:
    results = {
        name: measure(name, size=200, calls=15, seed=5, work=tmp_path / name, keep=False)
        for name in STRATEGIES
    }
    for name, r in results.items():
        assert r["errors"] == [], (name, r["errors"])
        assert r["exact"], (name, r["restores"])
        assert r["edit"]["count"] + r["shell"]["count"] == 15
        assert r["storage_bytes"] > 0
        assert set(r["restores"]) == {"1 back", "50 back", "first"}
    digests = {name: r["digests"] for name, r in results.items()}
    assert len({tuple(sorted(d.items())) for d in digests.values()}) == 1, digests
    report = render_report(
        {200: results}, "python -m bench.run --sizes 200 --calls 15", started=datetime.now(UTC)
    )
    assert "## Targets" in report and "| retrace |" in report and "| shadow-git |" in report
    assert "NO:" not in report
