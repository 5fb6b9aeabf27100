"""Smoke test of the long-session benchmark at a tiny size: correctness only, never speed.

Every strategy replays the same plan (trace + restore cycles with forks) on 200 files; every
return to the tip must be byte-exact, Retrace and the floor must end on the same tree, the agent
path must time every scripted edit call, and the report must render. The real figures come from
``python -m bench.long_session`` (see bench/README.md).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench.long_report import render
from bench.long_session import BACK_TO_TIP, Cycle, measure, parse_args, plan
from bench.trace import make_trace
from bench.workspace import generate

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the shadow-git baseline needs git")

KNOBS = ["--files=200", "--calls=40", "--old-sessions=3", "--git-calls=20", "--agent-calls=3"]


def test_plan_cycles_through_every_restore_target(tmp_path: Path) -> None:
    trace = make_trace(generate(tmp_path / "ws", 200, seed=2), 40, seed=2)
    cycles = [c for c in plan(trace, 8, seed=2) if isinstance(c, Cycle)]
    assert [(c.at, c.label) for c in cycles] == [
        (8, "1 back"), (16, "50 back"), (24, "first"), (32, "random older"), (40, "1 back"),
    ]  # fmt: skip
    assert [c.target for c in cycles[:3]] == [7, 0, 0]
    assert 0 <= cycles[3].target < 31


def test_every_strategy_runs_the_plan_and_returns_to_the_tip_byte_exact(tmp_path: Path) -> None:
    args = parse_args([*KNOBS, "--restore-every=10", "--verify"])
    results = {name: measure(name, args, tmp_path / "run") for name in ("retrace", "floor", "shadow-git")}
    for name, r in results.items():
        assert r["errors"] == [], (name, r["errors"])
        assert (
            set(r["restores"]) == {"1 back", "50 back", "first", "random older", BACK_TO_TIP}
            or name == "shadow-git"
        )
        assert r["restores"][BACK_TO_TIP]["count"] >= 2
        assert r["store_bytes"] > 0 and r["maxrss_kb"] > 0
    rt, floor, git = results["retrace"], results["floor"], results["shadow-git"]
    assert rt["edit"]["count"] + rt["shell"]["count"] == 40 and rt["fork"]["count"] == 4
    assert git["edit"]["count"] + git["shell"]["count"] == 20
    assert rt["final_digest"] == floor["final_digest"]
    assert rt["agent"]["count"] == rt["agent"]["requested"] == 3
    assert rt["old_sessions"] == 3
    knobs = {
        "files": 200,
        "calls": 40,
        "old_sessions": 3,
        "git_calls": 20,
        "agent_calls": 3,
        "restore_every": 10,
    }
    report = render(results, knobs, "python -m bench.long_session", datetime.now(UTC))
    assert "## Long session: targets" in report and "tool result → checkpointCreated" in report
    assert "identical trees" in report and "crashed" not in report
