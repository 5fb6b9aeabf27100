"""A first-folder row of a tool call that changed files in other folders of a multi-root
workspace says so (``meta.folders``: root → that folder's checkpoint), instead of "unchanged"."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from retrace.app.timeline.describe import describe, folders_gist
from retrace.app.timeline.facts import ToolFact
from retrace.engine.models import Checkpoint, FileChange


def cp(tool: str, meta: dict[str, Any], files: list[str]) -> Checkpoint:
    one = {"status": "modified", "additions": 1, "deletions": 1}
    changes = [FileChange.model_validate({"path": p, **one}) for p in files]
    fields = {"id": "c", "parent": None, "sessionId": "s", "kind": "tool", "tool": tool, "label": tool}
    when = datetime(2026, 1, 1, tzinfo=UTC)
    return Checkpoint.model_validate({**fields, "createdAt": when, "meta": meta, "files": changes})


ROWS = [
    # tool, meta, files of this folder, summary
    ("write_file", {"folders": {"/w/api": "x1"}}, [], "changes in api"),
    ("run_command", {"folders": {"/w/api": "x1", "/w/docs": "x2"}}, [], "changes in api, docs"),
    ("run_command", {"folders": {"/w/api": "x1"}}, ["a.txt"], "a.txt +1 −1 · also in api"),
    ("run_command", {}, [], "no file changes"),
    ("run_command", {"folders": "junk"}, [], "no file changes"),  # stored data: a wrong shape says nothing
    ("run_command", {"folders": {}}, [], "no file changes"),
    ("run_command", {"folders": {"": "x", 7: "y"}}, [], "no file changes"),
]


@pytest.mark.parametrize(("tool", "meta", "files", "summary"), ROWS)
def test_row_summary_names_the_other_folders(
    tool: str, meta: dict[str, Any], files: list[str], summary: str
) -> None:
    fact = ToolFact(
        "c", tool, {"command": "x"} if tool == "run_command" else {"path": "api/x", "content": "y"}, "ok"
    )
    assert describe(cp(tool, meta, files), fact, {})[1] == summary


def test_names_are_the_last_component_windows_too() -> None:
    assert folders_gist({"folders": {"C:\\w\\Api": "x", "/w/web/": "y"}}) == "Api, web"
