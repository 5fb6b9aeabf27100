"""Rows say what git did: the pure describe over the stamped states."""

from __future__ import annotations

from typing import Any

import pytest

from retrace.app.timeline.git_rows import git_change

A, B = "a" * 40, "b" * 40


def st(head: str | None, branch: str | None, detached: bool = False) -> dict[str, Any]:
    return {"head": head, "branch": branch, "detached": detached, "indexDirty": False}


@pytest.mark.parametrize(
    ("before", "after", "label", "words"),
    [
        (
            st(A, "main"),
            st(A, "feature"),
            "run_command: git switch -c feature",
            "switched to branch feature (new)",
        ),
        (
            st(A, "main"),
            st(A, "feature"),
            "run_command: git checkout -b feature",
            "switched to branch feature (new)",
        ),
        (st(A, "main"), st(B, "dev"), "git checkout dev", "switched to branch dev"),
        (st(A, "main"), st(B, "main"), "run_command: git add . && git commit -m x", "committed bbbbbbb"),
        (st(None, "main"), st(B, "main"), "run_command: make release", "committed bbbbbbb"),
        (st(B, "main"), st(A, "main"), "run_command: git reset --hard HEAD~1", "reset to aaaaaaa"),
        (
            st(A, "main"),
            st(B, "main"),
            "run_command: git pull --rebase",
            "HEAD moved to bbbbbbb (pull/merge/rebase)",
        ),
        (st(A, "main"), st(B, "main"), "run_command: ./script.sh", "HEAD moved to bbbbbbb"),
        (st(A, "main"), st(B, None, True), "git checkout bbbbbbb", "detached HEAD at bbbbbbb"),
        (st(A, "main"), st(A, "main"), "git status", None),
    ],
)
def test_git_change(before: dict[str, Any], after: dict[str, Any], label: str, words: str | None) -> None:
    assert git_change({"gitBefore": before, "git": after}, label) == words


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"git": st(A, "main")},
        {"gitBefore": "x", "git": st(A, "main")},
        {"gitBefore": st("zz", "m"), "git": st(A, "m")},
    ],
)
def test_no_or_damaged_states_say_nothing(meta: dict[str, Any]) -> None:
    assert git_change(meta, "git commit") is None
