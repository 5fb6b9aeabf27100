"""``retrace mcp``'s ``list_checkpoints`` and bookmarks, through the real stdio server: ``bookmarks:
true`` keeps the named checkpoints (a mark's label, a name given in the editor) and every row says
its name; a name removed is not listed; a non-boolean flag is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mcp_server.mcp_support import Seeded, retrace_mcp

from retrace.engine import Engine
from retrace.engine.bookmarks import name_checkpoint

pytestmark = pytest.mark.slow


async def test_list_bookmarks_only_with_their_names(seeded: Seeded, workspace: Path, store: Path) -> None:
    with Engine.open(workspace, store, create=False) as engine:
        name_checkpoint(engine, seeded.edit, "answer edited")
    async with retrace_mcp(workspace, store) as mcp:
        text, listed = await mcp.call("list_checkpoints", {"bookmarks": True})
        rows = listed["checkpoints"]
        assert [(r["id"], r["bookmark"]) for r in rows] == [
            (seeded.manual, "before refactor"),
            (seeded.edit, "answer edited"),
        ]
        assert "[bookmark: answer edited]" in text
        _, everything = await mcp.call("list_checkpoints", {})
        assert {r["id"]: r["bookmark"] for r in everything["checkpoints"]}[seeded.write] is None
        _, marks = await mcp.call("list_checkpoints", {"bookmarks": True, "kind": "manual"})
        assert [r["id"] for r in marks["checkpoints"]] == [seeded.manual]
        refused = await mcp.error("list_checkpoints", {"bookmarks": "yes"})
        assert "bookmarks" in refused
    with Engine.open(workspace, store, create=False) as engine:
        name_checkpoint(engine, seeded.manual, "")
    async with retrace_mcp(workspace, store) as mcp:
        _, listed = await mcp.call("list_checkpoints", {"bookmarks": True})
        assert [r["id"] for r in listed["checkpoints"]] == [seeded.edit]
