"""Ranking workspace files for the chat input's ``@`` completion (pure), table-tested."""

from __future__ import annotations

import pytest

from retrace.app.workspace_files import rank_paths

PATHS = [
    "src/app.py",
    "src/apple/tree.py",
    "docs/app-guide.md",
    "README.md",
    "tests/test_app.py",
    "a/p/p.txt",
]


@pytest.mark.parametrize(
    ("query", "limit", "expected"),
    [
        ("app", 3, ["src/app.py", "docs/app-guide.md", "tests/test_app.py"]),
        ("@readme", 10, ["README.md"]),
        ("zzz", 10, []),
        ("", 2, ["README.md", "a/p/p.txt"]),
        ("tree", 10, ["src/apple/tree.py"]),
        ("src/app", 10, ["src/app.py", "src/apple/tree.py"]),
    ],
)
def test_rank_paths(query: str, limit: int, expected: list[str]) -> None:
    assert rank_paths(PATHS, query, limit) == expected
