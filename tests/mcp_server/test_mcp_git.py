"""``retrace mcp``'s restore in a git repository whose branch moved since the checkpoint: refused
with the reason until ``gitChoice`` says ``filesOnly`` or ``parkFirst`` (as every front end)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp_support import retrace_mcp

from retrace.engine import Engine

pytestmark = pytest.mark.slow


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


async def test_a_moved_branch_needs_a_git_choice(relay_dir: Path, tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "app.py").write_text("v = 1\n", "utf-8")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "one")
    with Engine.open(ws, store, session_id="cli", create=True) as engine:
        target = engine.checkpoint(label="on main", kind="manual").id
        git(ws, "switch", "-q", "-c", "feature")
        (ws / "app.py").write_text("v = 2\n", "utf-8")
        engine.checkpoint(label="on feature", kind="manual")
    async with retrace_mcp(ws, store) as mcp:
        text = await mcp.error("restore_checkpoint", {"id": target, "confirm": True})
        assert "git moved since this checkpoint" in text and "gitChoice" in text
        assert (ws / "app.py").read_text("utf-8") == "v = 2\n"
        _, out = await mcp.call(
            "restore_checkpoint", {"id": target, "confirm": True, "gitChoice": "parkFirst"}
        )
        assert out["outcome"] == "applied"
        assert (ws / "app.py").read_text("utf-8") == "v = 1\n"
    assert len(git(ws, "branch", "--list", "retrace/parked-*").splitlines()) == 1
    assert git(ws, "rev-parse", "--abbrev-ref", "HEAD") == "feature"
