"""Line counts are bounded on the commit path by work: a big real-code change is listed with
``counted=False`` (no numbers, not zeros) and counted when someone asks; a small edit is
counted at once; every display says "not counted yet" instead of showing zeros."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.engine.conftest import write

import retrace.engine.commit as commit_module
from retrace.app.timeline.describe import NOT_COUNTED, file_stats, files_gist
from retrace.cli.format import change_counts, change_summary
from retrace.engine import Engine
from retrace.engine.commit import file_changes
from retrace.engine.models import FileChange, FileEntry

Open = Callable[..., Engine]


def _module(i: int, version: int) -> str:
    body = "".join(f"def f{i}_{n}():\n    return {n}\n" for n in range(400))
    return f"VERSION = {version}\n" + body + f"# end of version {version}\n"


def test_small_edit_is_counted_at_commit(ws: Path, open_engine: Open) -> None:
    write(ws, "a.py", "x = 1\ny = 2\n")
    eng = open_engine()
    write(ws, "a.py", "x = 1\ny = 3\nz = 4\n")
    cp = eng.checkpoint("edit", ["a.py"])
    (f,) = cp.files
    assert f.counted and (f.additions, f.deletions) == (2, 1)


def test_big_change_is_listed_uncounted_then_counted_on_request(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_module, "COUNT_LINES_BUDGET_S", 60.0)  # a busy machine: exact counts
    for i in range(30):
        write(ws, f"pkg/m{i}.py", _module(i, 1))
    eng = open_engine()
    for i in range(30):
        write(ws, f"pkg/m{i}.py", _module(i, 2))
    cp = eng.checkpoint("refactor")
    assert len(cp.files) == 30
    uncounted = [f for f in cp.files if not f.counted]
    assert uncounted, "a 30-file, 30 KB-per-file change was counted on the commit path"
    assert all((f.additions, f.deletions) == (0, 0) and not f.approximate for f in uncounted)
    assert cp.meta["lineStatsOmitted"] == len(uncounted)
    full = eng.count_lines(cp.id)
    assert all(f.counted for f in full.files)
    assert all((f.additions, f.deletions) == (2, 2) for f in full.files)
    assert eng.get(cp.id).files == full.files  # kept: later readers see the counts
    assert {f.path: f.additions for f in eng.diff(eng.timeline()[0].id, cp.id)} == {
        f.path: f.additions for f in full.files
    }


def test_count_lines_is_bounded_per_request(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        write(ws, f"m{i}.py", _module(i, 1))
    eng = open_engine()
    for i in range(5):
        write(ws, f"m{i}.py", _module(i, 2))
    cp = eng.checkpoint("refactor")
    monkeypatch.setattr(commit_module, "COUNT_LINES_BUDGET_S", -1.0)
    assert [f.counted for f in eng.count_lines(cp.id).files] == [f.counted for f in cp.files]


@pytest.mark.parametrize(
    ("sizes", "counted"),
    [
        ([10, 10], [True, True]),
        ([commit_module.COMMIT_COUNT_FILE_BYTES + 1], [False]),
        ([commit_module.COMMIT_COUNT_BYTES // 2 - 1] * 3, [False, False, False]),  # each over the file cap
        ([8000] * 4, [True] * 4),  # 16 KB per file (both sides): four fit in 64 KB
        # Five do not: none is counted on the commit path (counting the first four would cost
        # the commit its whole budget and still leave the change "not counted yet").
        ([8000] * 5, [False] * 5),
        ([8000] * 10, [False] * 10),
        ([10, commit_module.COMMIT_COUNT_FILE_BYTES + 1], [False, False]),
    ],
)
def test_commit_count_bound_table(sizes: list[int], counted: list[bool]) -> None:
    old = {f"f{i}": FileEntry(kind="file", hash=f"{i:064x}", size=s) for i, s in enumerate(sizes)}
    new = {f"f{i}": FileEntry(kind="file", hash=f"{i + 100:064x}", size=s) for i, s in enumerate(sizes)}
    files, omitted = file_changes(
        old, new, content=lambda e: b"x\n", max_bytes=commit_module.COMMIT_COUNT_BYTES
    )
    assert [f.counted for f in files] == counted
    assert omitted == counted.count(False)


def test_displays_never_show_zeros_for_uncounted() -> None:
    done = FileChange(path="a.py", status="modified", additions=3, deletions=1)
    pending = FileChange(path="b.py", status="modified", counted=False)
    assert file_stats([done]) == "+3 −1"
    assert file_stats([pending]) == NOT_COUNTED
    assert files_gist([done, pending]) == f"a.py, b.py {NOT_COUNTED}"
    assert file_stats([done, pending, done, pending]) == f"4 files {NOT_COUNTED}"
    assert "+0" not in change_summary([done, pending]) and "not counted" in change_summary([pending])
    assert change_counts(pending) == "lines not counted yet"
    assert change_counts(done) == "+3 -1"
