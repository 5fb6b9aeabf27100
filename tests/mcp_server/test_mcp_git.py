"""``retrace mcp``'s restore in a git repository whose branch moved since the checkpoint: refused
with the reason until ``gitChoice`` says ``filesOnly`` or ``parkFirst`` (as every front end)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.handoff.git_support import git_text as git
from tests.mcp_server.mcp_support import retrace_mcp

from retrace.engine import Engine

pytestmark = pytest.mark.slow


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
