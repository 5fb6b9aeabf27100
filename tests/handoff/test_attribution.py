"""Line attribution: the bounded line diff's opcodes (table), and who owns each line after a
sequence of agent, external and restore checkpoints (in-process engine on real files)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from retrace.app.attribution import attribution
from retrace.engine import Engine
from retrace.engine.line_stats import line_opcodes
from retrace.protocol.handoff import TraceRecord

FAR = 1e9


@pytest.mark.parametrize(
    ("a", "b", "ops"),
    [
        ([], [], []),
        (["x\n"], ["x\n"], [("equal", 0, 1, 0, 1)]),
        ([], ["x\n"], [("insert", 0, 0, 0, 1)]),
        (["x\n", "y\n"], ["x\n"], [("equal", 0, 1, 0, 1), ("delete", 1, 2, 1, 1)]),
        (
            ["a\n", "b\n", "c\n"],
            ["a\n", "B\n", "c\n"],
            [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 2), ("equal", 2, 3, 2, 3)],
        ),
        (
            ["a\n", "c\n"],
            ["a\n", "b\n", "c\n"],
            [("equal", 0, 1, 0, 1), ("insert", 1, 1, 1, 2), ("equal", 1, 2, 2, 3)],
        ),
    ],
)
def test_line_opcodes(a: list[str], b: list[str], ops: list[tuple[str, int, int, int, int]]) -> None:
    got, approximate = line_opcodes(a, b, deadline=time.perf_counter() + FAR)
    assert got == ops and not approximate


def test_an_expired_budget_gives_a_valid_coarse_script() -> None:
    a = [f"{i}\n" for i in range(50)]
    b = [*a[:10], "new\n", *a[11:30], "other\n", *a[31:]]
    ops, approximate = line_opcodes(a, b, deadline=time.perf_counter() - 1)
    assert approximate
    # Still an edit script: it covers both sides exactly.
    assert ops[0][1] == 0 and ops[-1][2] == len(a) and ops[-1][4] == len(b)
    assert all(o[2] == n[1] and o[4] == n[3] for o, n in itertools.pairwise(ops))


def owners(trace: TraceRecord, path: str) -> dict[int, tuple[str, str]]:
    [f] = [f for f in trace.files if f.path == path]
    return {
        line: (c.contributor.type, c.related[0].url.removeprefix("retrace:checkpoint/"))
        for c in f.conversations
        for r in c.ranges
        for line in range(r.start_line, r.end_line + 1)
    }


def test_lines_belong_to_the_checkpoint_that_last_introduced_them(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    app = ws / "app.py"
    app.write_text("one\ntwo\nthree\n")
    (ws / "logo.bin").write_bytes(b"\x00\x01")
    with Engine.open(ws, tmp_path / "store", session_id="s", create=True) as engine:
        base = engine.head.id
        app.write_text("one\nTWO\nthree\nfour\n")
        agent = engine.checkpoint(kind="tool", tool="edit_file", turn_id="t1").id
        app.write_text("zero\none\nTWO\nthree\nfour\n")
        user = engine.record_external()
        assert user is not None
        app.write_text("zero\none\nTWO\nthree\nfour\nfive\n")
        agent2 = engine.checkpoint(kind="tool", tool="write_file", turn_id="t2").id
        trace = attribution(engine, None, engine.head.id)
        assert owners(trace, "app.py") == {
            1: ("human", user.id),
            2: ("unknown", base),
            3: ("ai", agent),
            4: ("unknown", base),
            5: ("ai", agent),
            6: ("ai", agent2),
        }
        meta = trace.metadata["dev.retrace"]
        assert meta.binary == ["logo.bin"] and meta.file_owners["app.py"] == agent2
        assert meta.checkpoints[agent].tool == "edit_file" and meta.checkpoints[user.id].kind == "external"
        # The range agent..head (agent excluded, as git reads A..B): lines present at its start
        # predate it and are unknown, attributed to the start.
        since = attribution(engine, agent, engine.head.id)
        assert owners(since, "app.py") == {
            1: ("human", user.id),
            2: ("unknown", agent),
            3: ("unknown", agent),
            4: ("unknown", agent),
            5: ("unknown", agent),
            6: ("ai", agent2),
        }


def test_a_small_change_is_exact_even_past_the_budget() -> None:
    """A busy machine that spent the budget elsewhere must not make a few lines' counts an
    estimate (engine.line_stats.EXACT_BELOW_LINES)."""
    a = ["def main():\n", "    return 2\n"]
    b = ["def main():\n", "    return 3\n", "    # three\n"]
    ops, approximate = line_opcodes(a, b, deadline=time.perf_counter() - 1)
    assert not approximate
    assert ops == [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 3)]
