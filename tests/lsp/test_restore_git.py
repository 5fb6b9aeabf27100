"""A git-aware restore through the real server: the dry run says where git was and is, a code
restore after a branch switch is refused with ``gitMoved`` (nothing changes), ``filesOnly``
restores, ``parkFirst`` parks the current state on a new branch first; the rows carry git's move."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.handoff.git_support import git_text as git
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


@pytest.fixture
async def repo_editor(workspace: Path, store: Path, session_model: FakeModel) -> AsyncIterator[EditorClient]:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "sample")
    client = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    yield client
    await stop_editor(client)


async def restore(editor: EditorClient, cp_id: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request(
        "retrace/checkpoint/restore", {"id": cp_id, "mode": "code", **extra}
    )
    return result


async def test_branch_switch_asks_then_files_only_or_park_first(
    repo_editor: EditorClient, workspace: Path
) -> None:
    editor = repo_editor
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    target = created[0]
    assert target["meta"]["git"]["branch"] == "main"
    git(workspace, "switch", "-q", "-c", "feature")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "agent work")
    before = files(workspace)

    dry = await restore(editor, target["id"], dryRun=True)
    assert dry["git"]["branchMoved"] and dry["git"]["targetBranch"] == "main"
    assert dry["git"]["currentBranch"] == "feature"

    refused = await editor.request_error(
        "retrace/checkpoint/restore", {"id": target["id"], "mode": "code", "force": True}
    )
    assert refused.data["code"] == "gitMoved", refused
    assert files(workspace) == before, "a refusal changes nothing"

    parked = await restore(editor, target["id"], force=True, gitChoice="parkFirst")
    assert parked["outcome"]["kind"] == "applied", parked
    branch = parked["git"]["parkedBranch"]
    assert branch.startswith("retrace/parked-")
    assert git(workspace, "branch", "--list", branch, "--format=%(refname:short)") == branch
    assert git(workspace, "rev-parse", "--abbrev-ref", "HEAD") == "feature"

    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["outcome"]["kind"] == "applied", undone
    files_only = await restore(editor, target["id"], force=True, gitChoice="filesOnly")
    assert files_only["outcome"]["kind"] == "applied"
    assert "parkedBranch" not in files_only["git"] or files_only["git"]["parkedBranch"] is None
    assert len(git(workspace, "branch", "--list", "retrace/parked-*").splitlines()) == 1
