"""The path index, table-tested over the history graph's public API: candidates per path, newest
first, below a position; checkpoints without a delta are always candidates; the index grows with
the history and is rebuilt when retention drops checkpoints."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest

from retrace.app.path_index import index_of
from retrace.engine.history.graph import History
from retrace.engine.manifest import Delta
from retrace.engine.models import Checkpoint, FileEntry
from retrace.engine.store.blobs import BlobStore

ENTRY = FileEntry(kind="file", hash="0" * 64, size=1)


def add(history: History, cid: str, paths: list[str] | None, session: str = "s1") -> None:
    """Commit ``cid`` changing ``paths`` (``None``: no delta, like a baseline)."""
    cp = Checkpoint(
        id=cid,
        parent=history.order[-1] if history.order else None,
        session_id=session,
        kind="baseline" if paths is None else "tool",
        created_at=datetime.now(UTC),
    )
    delta: Delta | None = None if paths is None else {p: ENTRY for p in paths}
    history.add(cp, delta, "snap" if paths is None else None, 0)


def graph() -> History:
    history = History(cast(BlobStore, None))
    add(history, "c0", None)
    add(history, "c1", ["a", "b"])
    add(history, "c2", ["b"])
    add(history, "c3", ["c"], session="s2")
    add(history, "c4", ["a"])
    return history


@pytest.mark.parametrize(
    ("path", "before", "expected"),
    [
        ("a", 5, [4, 1, 0]),
        ("b", 5, [2, 1, 0]),
        ("b", 2, [1, 0]),
        ("c", 3, [0]),
        ("never", 5, [0]),
        ("a", 0, []),
    ],
)
def test_candidates_newest_first_below_a_position(path: str, before: int, expected: list[int]) -> None:
    assert list(index_of(graph()).candidates(path, before)) == expected


def test_the_index_grows_with_the_history_and_is_rebuilt_after_a_drop() -> None:
    history = graph()
    index = index_of(history)
    assert (index.count, index.sessions, index.position["c3"]) == (5, {"s1", "s2"}, 3)
    add(history, "c5", ["a"])
    assert index_of(history) is index and list(index.candidates("a", index.count)) == [5, 4, 1, 0]
    history.drop({"c1"})
    rebuilt = index_of(history)
    assert rebuilt is not index
    assert list(rebuilt.candidates("a", rebuilt.count)) == [4, 3, 0]
    assert rebuilt.position["c5"] == 4
