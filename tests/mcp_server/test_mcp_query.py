"""The pure page selection of ``list_checkpoints`` (:mod:`retrace.mcp_server.query`), table-tested."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from retrace.engine.models import Checkpoint, FileChange
from retrace.mcp_server.query import OWN_AGENT, Filters, UnknownCursorError, agent_of, matches, page

AGENTS = {"claude-code-s": "claude-code", "gemini-cli-g": "gemini-cli"}


def cp(cid: str, session: str = "cli", kind: str = "manual", **fields: Any) -> Checkpoint:
    files = [FileChange(path=p, status="modified") for p in fields.pop("paths", [])]
    return Checkpoint(
        id=cid,
        parent=None,
        session_id=session,
        kind=kind,  # type: ignore[arg-type]
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        files=files,
        **fields,
    )


@pytest.mark.parametrize(
    ("checkpoint", "agent"),
    [
        (cp("a", "claude-code-s", "tool", tool="Write", meta={"agent": "claude-code"}), "claude-code"),
        (cp("b", "claude-code-s", "external"), "claude-code"),  # the session says whose
        (cp("c", "x", "tool", meta={"agent": "gemini-cli"}), "gemini-cli"),  # meta wins
        (cp("d", "retrace-session", "tool", tool="edit_file"), OWN_AGENT),
        (cp("e", "retrace-session", "summary"), OWN_AGENT),
        (cp("f", "cli", "manual"), None),
        (cp("g", "cli", "external"), None),
        (cp("h", "x", "tool", meta={"agent": ""}), OWN_AGENT),  # an empty name names nobody
        (cp("i", "x", "tool", meta={"agent": 7}), OWN_AGENT),  # nor does a number
    ],
)
def test_agent_of(checkpoint: Checkpoint, agent: str | None) -> None:
    assert agent_of(checkpoint, AGENTS) == agent


EDIT = cp(
    "e1", "claude-code-s", "tool", tool="Edit", label="Edit src/App.py", paths=["src/App.py", "docs/x.md"]
)
RENAMED = Checkpoint(
    id="r1",
    parent=None,
    session_id="cli",
    kind="external",
    created_at=datetime(2026, 1, 1, tzinfo=UTC),
    files=[FileChange(path="new/name.txt", status="renamed", old_path="old/name.txt")],
)


@pytest.mark.parametrize(
    ("checkpoint", "filters", "expected"),
    [
        (EDIT, Filters(), True),
        (EDIT, Filters(session="claude-code-s"), True),
        (EDIT, Filters(session="claude-code"), False),  # exact, not a prefix
        (EDIT, Filters(kind="tool"), True),
        (EDIT, Filters(kind="manual"), False),
        (EDIT, Filters(tool="Edit"), True),
        (EDIT, Filters(tool="edit"), False),  # tool names are exact
        (EDIT, Filters(agent="claude-code"), True),
        (EDIT, Filters(agent="gemini-cli"), False),
        (EDIT, Filters(path="src/"), True),
        (EDIT, Filters(path="App.py"), True),
        (EDIT, Filters(path="app.py"), False),  # a path is case-sensitive
        (EDIT, Filters(text="app.py"), True),  # text is not
        (EDIT, Filters(text="EDIT"), True),
        (EDIT, Filters(text="docs/x"), True),
        (EDIT, Filters(text="nowhere"), False),
        (EDIT, Filters(tool="Edit", agent="claude-code", path="docs"), True),
        (EDIT, Filters(tool="Edit", agent="claude-code", path="tests"), False),  # every filter holds
        (RENAMED, Filters(path="old/name"), True),  # either side of a rename
        (RENAMED, Filters(text="OLD/"), True),
        (RENAMED, Filters(tool="Edit"), False),  # no tool never matches a tool filter
    ],
)
def test_matches(checkpoint: Checkpoint, filters: Filters, expected: bool) -> None:
    assert matches(checkpoint, filters, AGENTS) is expected


HISTORY = [cp(f"c{n}", kind="tool" if n % 2 else "manual") for n in range(10)]
"""Creation order: c0 oldest … c9 newest; odd ones are tool calls."""


@pytest.mark.parametrize(
    ("filters", "limit", "before", "ids", "cursor"),
    [
        (Filters(), 3, None, ["c9", "c8", "c7"], "c7"),
        (Filters(), 3, "c7", ["c6", "c5", "c4"], "c4"),
        (Filters(), 3, "c1", ["c0"], None),
        (Filters(), 3, "c0", [], None),
        (Filters(), 10, None, [f"c{n}" for n in range(9, -1, -1)], None),  # exactly all: no cursor
        (Filters(), 9, None, [f"c{n}" for n in range(9, 0, -1)], "c1"),
        (Filters(kind="tool"), 2, None, ["c9", "c7"], "c7"),
        (Filters(kind="tool"), 2, "c7", ["c5", "c3"], "c3"),
        (Filters(kind="tool"), 2, "c3", ["c1"], None),
        (Filters(kind="tool"), 5, None, ["c9", "c7", "c5", "c3", "c1"], None),
        (Filters(kind="tool"), 2, "c8", ["c7", "c5"], "c5"),  # a cursor need not match the filter
        (Filters(kind="restore"), 50, None, [], None),
    ],
)
def test_page(filters: Filters, limit: int, before: str | None, ids: list[str], cursor: str | None) -> None:
    rows, next_before = page(HISTORY, filters, {}, limit=limit, before=before)
    assert [r.id for r in rows] == ids
    assert next_before == cursor


@pytest.mark.parametrize("before", ["zz", "c", "C9", "c9 ", ""])
def test_an_unknown_cursor_is_refused(before: str) -> None:
    with pytest.raises(UnknownCursorError, match="nextBefore"):
        page(HISTORY, Filters(), {}, limit=5, before=before)
