"""Which story an outline answer pages (``focus_of``): table-tested over stand-in stories."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from retrace.app.timeline.pages import focus_of


@dataclass
class _Session:
    id: str


@dataclass
class _Story:
    session: _Session
    workspace: bool
    row_count: int


def stories(*spec: tuple[str, bool, int]) -> list[_Story]:
    return [_Story(_Session(sid), workspace, rows) for sid, workspace, rows in spec]


LONG = ("long", False, 10_000)
FRESH = ("fresh", False, 0)
WORKSPACE = ("ws", True, 3)


@pytest.mark.parametrize(
    ("spec", "running", "focus", "expected"),
    [
        ((WORKSPACE, LONG), set(), None, "long"),
        ((WORKSPACE, LONG, FRESH), set(), "fresh", "long"),  # an empty chat session never steals the page
        ((WORKSPACE, LONG, FRESH), {"fresh"}, "fresh", "fresh"),  # ... unless it is running
        ((WORKSPACE, LONG, FRESH), {"fresh"}, None, "fresh"),
        ((WORKSPACE, FRESH, LONG), set(), None, "long"),
        ((WORKSPACE, LONG, ("b", False, 2)), set(), "long", "long"),
        ((WORKSPACE, LONG, ("b", False, 2)), set(), None, "b"),
        ((WORKSPACE, LONG), set(), "ws", "long"),  # the workspace story is never the focus when agents exist
        ((WORKSPACE, FRESH), set(), None, "ws"),  # a fresh chat never hides the baseline
        ((WORKSPACE, FRESH), set(), "fresh", "ws"),
        (((("ws", True, 0)), FRESH), set(), None, "fresh"),
        ((WORKSPACE,), set(), None, "ws"),
        ((), set(), None, None),
    ],
)
def test_focus(
    spec: tuple[tuple[str, bool, int], ...], running: set[str], focus: str | None, expected: str | None
) -> None:
    assert focus_of(stories(*spec), frozenset(running), focus) == expected  # type: ignore[arg-type]
