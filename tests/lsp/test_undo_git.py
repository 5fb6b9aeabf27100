"""An undo honours git like a restore (real server, real git): undoing a code restore after the
branch moved is refused with ``gitMoved`` (nothing changes) unless ``gitChoice`` says
``filesOnly`` or ``parkFirst``; with git where it was, the undo asks nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.lsp import test_restore_git
from tests.lsp.lsp_support import EditorClient
from tests.lsp.test_restore_git import files, git

repo_editor = test_restore_git.repo_editor
"""The git repository's editor of the restore tests (a fixture shared by reference)."""

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_undo_after_a_branch_switch_asks_then_files_only(
    repo_editor: EditorClient, workspace: Path
) -> None:
    editor = repo_editor
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    done = await editor.request(
        "retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "code", "force": True}
    )
    assert done["outcome"]["kind"] == "applied", done
    restored = files(workspace)

    git(workspace, "switch", "-q", "-c", "elsewhere")
    refused = await editor.request_error("retrace/restore/undoLast", {})
    assert refused.data["code"] == "gitMoved", refused
    assert files(workspace) == restored, "a refusal changes nothing"

    undone = await editor.request("retrace/restore/undoLast", {"gitChoice": "filesOnly"})
    assert undone["outcome"]["kind"] == "applied", undone
    assert files(workspace) != restored


async def test_undo_with_git_unmoved_asks_nothing(repo_editor: EditorClient, workspace: Path) -> None:
    editor = repo_editor
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    await editor.request(
        "retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "code", "force": True}
    )
    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["outcome"]["kind"] == "applied", undone
