"""Line statistics, display diffs and merges respect a real time budget, and say when they were cut.

The slow case comes from a real history: a 6.4k-line module split into two files (every other
function moves out), a diff whose edit script is long and interleaved. Counting it exactly takes
about a second with diff-match-patch's default timeout; a checkpoint must not wait that long, and
when counting is cut short the numbers must say they are approximate (``~+0 −3,200``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from diff_match_patch import diff_match_patch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import retrace.engine.commit as engine_module
import retrace.engine.stats as stats_module
from retrace.cli.format import change_counts
from retrace.engine import Engine
from retrace.engine.merge import merge3
from retrace.engine.models import FileChange
from retrace.engine.stats import line_stats, unified_diff_lines


def module(functions: list[int]) -> str:
    """A Python module with one 16-line function per number (distinct bodies, shared shapes)."""
    out = []
    for n in functions:
        out.append(f"def function_{n}(value):\n")
        out.append(f'    """Compute step {n} of the pipeline."""\n')
        for k in range(12):
            out.append(f"    value = value * {k + 1} + {n % 7}  # step {k}\n")
        out.append("    return value\n")
        out.append("\n")
    return "".join(out)


BIG = module(list(range(400)))  # 6,400 lines
KEPT = module(list(range(0, 400, 2)))  # every other function stays
MOVED = module(list(range(1, 400, 2)))  # the others move to a new file


def test_fixture_is_the_real_shape() -> None:
    assert BIG.count("\n") == 6400 and KEPT.count("\n") == 3200


class SteppedClock:
    """A clock that moves only when the diff works: each ``diff_main`` call costs ``step`` seconds.

    Wall or CPU time of a 2-core machine running other suites is noise at this scale (a few
    milliseconds); counting the work started after the deadline is not. The CPU cost itself is a
    benchmark (``bench/``), never a timed test."""

    def __init__(self, step: float) -> None:
        self.now = 1_000.0
        self.step = step
        self.calls_after_deadline = 0
        self.calls = 0

    def read(self) -> float:
        return self.now

    def spy(self, real: Callable[..., object]) -> Callable[..., object]:
        def diff_main(dmp: object, a: str, b: str, checklines: bool, deadline: float) -> object:
            self.calls += 1
            if self.now >= deadline:
                self.calls_after_deadline += 1
            self.now += self.step
            return real(dmp, a, b, checklines, float("inf"))  # the real work, never cut early

        return diff_main


@pytest.mark.parametrize("budget_s", [0.0, 0.005, 0.025])
def test_one_file_diff_respects_the_budget_and_says_approximate(
    budget_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SteppedClock(step=0.001)
    monkeypatch.setattr(stats_module, "time", SimpleNamespace(perf_counter=clock.read, time=clock.read))
    monkeypatch.setattr(diff_match_patch, "diff_main", clock.spy(diff_match_patch.diff_main))
    stats = line_stats(BIG.encode(), KEPT.encode(), deadline=clock.read() + budget_s)
    assert clock.calls_after_deadline == 0, "no diff work starts once the budget is spent"
    assert clock.calls <= round(budget_s / clock.step) + 1
    assert stats.approximate, "this diff needs ~200 segment diffs: every budget here cuts it"
    assert stats.additions - stats.deletions == KEPT.count("\n") - BIG.count("\n"), (
        "net count is always exact"
    )
    assert stats.deletions >= 3200 and stats.additions >= 0


def test_the_same_diff_with_time_to_spare_is_exact() -> None:
    stats = line_stats(BIG.encode(), KEPT.encode(), deadline=time.perf_counter() + 60)
    assert (stats.additions, stats.deletions, stats.approximate) == (0, 3200, False)


def test_without_a_deadline_the_diff_is_still_bounded_and_marked() -> None:
    start = time.perf_counter()
    stats = line_stats(BIG.encode(), KEPT.encode())
    assert time.perf_counter() - start < 3.0
    assert stats.additions - stats.deletions == -3200


def test_a_generous_budget_gives_exact_counts() -> None:
    stats = line_stats(b"a\nb\nc\n", b"a\nc\nd\n", deadline=time.perf_counter() + 5)
    assert stats == (1, 1, False, False)


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d", "\n", "x = 1\n", "é\n"]), max_size=60)


@given(old=lines, new=lines, budget=st.sampled_from([-1.0, 0.0, 0.0005, 5.0]))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_counts_are_consistent_whether_cut_or_not(old: list[str], new: list[str], budget: float) -> None:
    a, b = "".join(old).encode(), "".join(new).encode()
    stats = line_stats(a, b, deadline=time.perf_counter() + budget)
    na, nb = len("".join(old).splitlines()), len("".join(new).splitlines())
    assert stats.additions - stats.deletions == nb - na
    assert 0 <= stats.additions <= nb and 0 <= stats.deletions <= na
    if budget >= 5.0:
        assert not stats.approximate
    if a == b:
        assert (stats.additions, stats.deletions) == (0, 0)


def test_module_split_checkpoint_stats_within_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pipeline.py").write_text(BIG)
    engine = Engine.open(ws, tmp_path / "store")
    spent: list[float] = []
    real = engine_module.line_stats

    def timed(*args: object, **kwargs: object) -> object:
        start = time.thread_time()  # CPU time: robust on a busy machine (see above)
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            spent.append(time.thread_time() - start)

    monkeypatch.setattr(engine_module, "line_stats", timed)
    gc.collect()
    try:
        (ws / "pipeline.py").write_text(KEPT)
        (ws / "stages.py").write_text(MOVED)
        cp = engine.checkpoint("split the module")
    finally:
        engine.close()
    budget = engine_module.LINE_STATS_BUDGET_S
    assert sum(spent) <= 3 * budget, (
        f"line stats took {sum(spent) * 1000:.1f} ms (budget {budget * 1000:g} ms)"
    )
    files = {f.path: f for f in cp.files}
    # Files this big are past the commit's work bound: listed as not counted (no zeros
    # standing in for counts), then counted on request, exactly or visibly approximate.
    assert all(not f.counted and (f.additions, f.deletions) == (0, 0) for f in files.values())
    with Engine.open(ws, tmp_path / "store") as reopened:
        files = {f.path: f for f in reopened.count_lines(cp.id).files}
    moved = files["stages.py"]
    assert not moved.counted or (moved.additions, moved.deletions) == (3200, 0) or moved.approximate
    kept = files["pipeline.py"]  # counted first (its diff is cut at the request's deadline)
    assert kept.counted and kept.additions - kept.deletions == -3200
    assert kept.approximate or (kept.additions, kept.deletions) == (0, 3200)


def test_cli_marks_approximate_counts() -> None:
    exact = FileChange(path="a.py", status="modified", additions=120, deletions=30)
    approx = FileChange(path="a.py", status="modified", additions=120, deletions=30, approximate=True)
    assert change_counts(exact) == "+120 -30"
    assert change_counts(approx) == "~+120 -30"


def test_display_diff_is_bounded_and_applies() -> None:
    a, b = BIG.splitlines(keepends=True), KEPT.splitlines(keepends=True)
    start = time.perf_counter()
    out, approximate = unified_diff_lines(a, b, "a/pipeline.py", "b/pipeline.py", timeout_s=0.05)
    assert time.perf_counter() - start < 1.0
    assert isinstance(approximate, bool)
    # Whatever its granularity, the patch turns a into b.
    assert apply_unified(a, out) == b


@given(old=lines, new=lines)
@settings(max_examples=200, deadline=None)
def test_display_diff_matches_difflib_format_and_applies(old: list[str], new: list[str]) -> None:
    a = [line if line.endswith("\n") else line + "\n" for line in old]
    b = [line if line.endswith("\n") else line + "\n" for line in new]
    out, approximate = unified_diff_lines(a, b, "a/f", "b/f", timeout_s=5.0)
    assert not approximate
    assert apply_unified(a, out) == b
    assert (out == []) == (a == b)


def apply_unified(a: list[str], patch: list[str]) -> list[str]:
    """Apply a unified diff (as produced by difflib's format) to ``a``."""
    result: list[str] = []
    pos = 0
    i = 0
    while i < len(patch) and not patch[i].startswith("@@"):
        i += 1
    while i < len(patch):
        header = patch[i]
        old_start = int(header.split()[1].split(",")[0].lstrip("-"))
        old_len_text = header.split()[1].split(",")
        old_len = int(old_len_text[1]) if len(old_len_text) > 1 else 1
        start = old_start - 1 if old_len else old_start
        result.extend(a[pos:start])
        pos = start
        i += 1
        while i < len(patch) and not patch[i].startswith("@@"):
            line = patch[i]
            if line.startswith(" "):
                assert a[pos] == line[1:]
                result.append(line[1:])
                pos += 1
            elif line.startswith("-"):
                assert a[pos] == line[1:]
                pos += 1
            elif line.startswith("+"):
                result.append(line[1:])
            i += 1
    result.extend(a[pos:])
    return result


def test_merge_is_bounded_and_refuses_rather_than_guesses() -> None:
    base = BIG.encode()
    theirs = KEPT.encode()
    ours = BIG.replace("def function_398(", "def function_three_ninety_eight(").encode()
    start = time.perf_counter()
    merged = merge3(base, ours, theirs, timeout_s=0.05)
    assert time.perf_counter() - start < 3.0
    if merged is not None:  # a merge is only clean when every change applied exactly
        assert "function_three_ninety_eight" in merged and "def function_1(" not in merged
