"""3-way merge and line statistics."""

from __future__ import annotations

import pytest

from retrace.engine.line_stats import line_stats, percentile, summarize
from retrace.engine.merge import merge3


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "expected"),
    [
        pytest.param("a\nb\nc\n", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n", id="ours-unchanged"),
        pytest.param("a\nb\nc\n", "A\nb\nc\n", "a\nb\nc\n", "A\nb\nc\n", id="theirs-unchanged"),
        pytest.param(
            "1\n2\n3\n4\n5\n6\n",
            "1 user\n2\n3\n4\n5\n6\n",
            "1\n2\n3\n4\n5\n6 agent\n",
            "1 user\n2\n3\n4\n5\n6 agent\n",
            id="disjoint",
        ),
        pytest.param("x = 1\n", "x = 2\n", "x = 3\n", None, id="same-spot"),
        pytest.param(
            "héllo wörld\n\n\nend ✓\n",
            "héllo wörld!\n\n\nend ✓\n",
            "héllo wörld\n\n\nend ✓✓\n",
            "héllo wörld!\n\n\nend ✓✓\n",
            id="non-ascii",
        ),
    ],
)
def test_merge3(base: str, ours: str, theirs: str, expected: str | None) -> None:
    assert merge3(base.encode(), ours.encode(), theirs.encode()) == expected


def test_merge3_refuses_binary() -> None:
    assert merge3(b"\x00a", b"\x00b", b"\x00c") is None


def test_line_stats() -> None:
    assert line_stats(b"a\nb\n", b"a\nc\nd\n") == (2, 1, False, False)
    assert line_stats(None, b"x\ny\n") == (2, 0, False, False)
    assert line_stats(b"x\n", None) == (0, 1, False, False)
    assert line_stats(b"\x00\x01", b"\x00\x02") == (0, 0, True, False)


def test_percentiles() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([1.0, 2.0, 3.0], 0.5) == 2.0
    s = summarize([float(i) for i in range(1, 101)])
    assert s.count == 100 and s.p50_ms == 50.5 and 95 < s.p95_ms < 96 and 99 < s.p99_ms <= 100


def test_line_stats_trimming_matches_a_plain_line_diff() -> None:
    # Common leading/trailing lines are cut before diffing: counts must equal a line diff of
    # the whole texts.
    import random

    from diff_match_patch import diff_match_patch

    def plain(a: str, b: str) -> tuple[int, int]:
        dmp = diff_match_patch()
        ca, cb, _lines = dmp.diff_linesToChars(a, b)
        adds = dels = 0
        for op, text in dmp.diff_main(ca, cb, False):
            adds += len(text) if op == 1 else 0
            dels += len(text) if op == -1 else 0
        return adds, dels

    rng = random.Random(7)
    for _ in range(400):
        base = [rng.choice(["a\n", "b\n", "c\n", "d", "\n", "e\r\n"]) for _ in range(rng.randint(0, 40))]
        new = list(base)
        for _ in range(rng.randint(0, 4)):
            i = rng.randint(0, len(new))
            if rng.random() < 0.4 and new:
                del new[min(i, len(new) - 1)]
            else:
                new.insert(i, rng.choice(["a\n", "x\n", "y", "\n"]))
        a, b = "".join(base), "".join(new)
        got = line_stats(a.encode(), b.encode())
        assert got[2] is False
        if a and b:
            assert got[:2] == plain(a, b), (a, b)
