"""``retrace mcp`` with no server holding the store: the official SDK's client drives the real
subprocess over stdio. Lists (filters, cursor, bounds), diffs (against the parent, another
checkpoint, the workspace; one path; binary named; a visible truncation note), a named
checkpoint, restores (a dry run by default, applied only with ``confirm``, conflicts refused
unless resolved per file) and every bad request answered with a clear tool error, the server
still serving and nothing lost."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from tests.mcp_server.mcp_support import AGENT_SESSION, Seeded, retrace_mcp

from retrace.engine import Engine

pytestmark = pytest.mark.slow

TOOLS = {"list_checkpoints", "show_checkpoint", "create_checkpoint", "restore_checkpoint"}


def ids(structured: dict[str, object]) -> list[str]:
    rows = structured["checkpoints"]
    assert isinstance(rows, list)
    return [row["id"] for row in rows]


async def test_tools_are_listed_with_bounded_schemas(seeded: Seeded, workspace: Path, store: Path) -> None:
    async with retrace_mcp(workspace, store) as mcp:
        tools = {t.name: t for t in (await mcp.session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        assert tool.inputSchema["type"] == "object"
        assert tool.outputSchema is not None
    limit = tools["list_checkpoints"].inputSchema["properties"]["limit"]
    assert limit["maximum"] == 500
    assert limit["default"] == 50
    restore = tools["restore_checkpoint"].inputSchema
    assert restore["properties"]["confirm"]["default"] is False
    assert "id" in restore["required"]


async def test_list_newest_first_with_filters_and_cursor(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    async with retrace_mcp(workspace, store) as mcp:
        text, out = await mcp.call("list_checkpoints", {})
        assert ids(out) == [seeded.manual, seeded.edit, seeded.write, seeded.baseline]
        first = out["checkpoints"][1]
        assert first["kind"] == "tool"
        assert first["tool"] == "Edit"
        assert first["agent"] == "claude-code"
        assert first["session"] == AGENT_SESSION
        assert first["filesChanged"] == 1
        assert first["label"] == "Edit src/app.py: return 42"
        assert first["time"].endswith("Z") or "+" in first["time"]
        assert out["nextBefore"] is None
        assert seeded.edit in text and "Edit" in text

        _, out = await mcp.call("list_checkpoints", {"agent": "claude-code"})
        assert ids(out) == [seeded.edit, seeded.write]
        _, out = await mcp.call("list_checkpoints", {"session": "cli"})
        assert ids(out) == [seeded.manual, seeded.baseline]
        _, out = await mcp.call("list_checkpoints", {"kind": "manual"})
        assert ids(out) == [seeded.manual]
        _, out = await mcp.call("list_checkpoints", {"tool": "Write"})
        assert ids(out) == [seeded.write]
        _, out = await mcp.call("list_checkpoints", {"path": "app.py"})
        assert ids(out) == [seeded.edit]
        _, out = await mcp.call("list_checkpoints", {"path": str(workspace / "src" / "new.py")})
        assert ids(out) == [seeded.write]
        _, out = await mcp.call("list_checkpoints", {"text": "REFACTOR"})
        assert ids(out) == [seeded.manual]
        _, out = await mcp.call("list_checkpoints", {"agent": "claude-code", "tool": "Write"})
        assert ids(out) == [seeded.write]
        text, out = await mcp.call("list_checkpoints", {"agent": "gemini-cli"})
        assert ids(out) == []
        assert "no checkpoint" in text

        # Pages: the cursor is the last id of a page.
        _, page = await mcp.call("list_checkpoints", {"limit": 2})
        assert ids(page) == [seeded.manual, seeded.edit]
        assert page["nextBefore"] == seeded.edit
        _, page = await mcp.call("list_checkpoints", {"limit": 2, "before": page["nextBefore"]})
        assert ids(page) == [seeded.write, seeded.baseline]
        assert page["nextBefore"] is None


async def test_show_diffs_against_parent_other_and_workspace(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    async with retrace_mcp(workspace, store) as mcp:
        text, out = await mcp.call("show_checkpoint", {"id": seeded.edit})
        assert out["checkpoint"]["id"] == seeded.edit
        assert out["against"] == seeded.write
        assert "-    return 1" in out["patch"] and "+    return 42" in out["patch"]
        assert out["truncated"] is False
        assert "+    return 42" in text
        assert [f["path"] for f in out["files"]] == ["src/app.py"]

        _, out = await mcp.call("show_checkpoint", {"id": seeded.manual[:-1]})  # a unique prefix
        assert {f["path"] for f in out["files"]} == {"logo.bin", "notes.md"}
        assert out["binaryFiles"] == ["logo.bin"]
        assert "Binary files" in out["patch"]
        assert "PNG" not in out["patch"]
        assert "+notes" in out["patch"]

        _, out = await mcp.call("show_checkpoint", {"id": seeded.manual, "path": "notes.md"})
        assert [f["path"] for f in out["files"]] == ["notes.md"]
        assert "logo.bin" not in out["patch"]

        _, out = await mcp.call("show_checkpoint", {"id": seeded.baseline, "against": seeded.edit})
        assert out["against"] == seeded.edit
        assert "src/new.py" in out["patch"]

        (workspace / "README.md").write_text("# Sample, edited by hand\n", "utf-8")
        _, out = await mcp.call("show_checkpoint", {"id": seeded.manual, "against": "workspace"})
        assert out["against"] == "workspace"
        assert "+# Sample, edited by hand" in out["patch"]

        _, out = await mcp.call("show_checkpoint", {"id": seeded.baseline})
        assert out["against"] is None  # the first checkpoint has no parent: its files are named
        assert {f["path"] for f in out["files"]} >= {"README.md", "src/app.py"}

        (workspace / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)), "utf-8")
        text, out = await mcp.call(
            "show_checkpoint", {"id": seeded.manual, "against": "workspace", "maxBytes": 2000}
        )
        assert out["truncated"] is True
        assert len(out["patch"].encode()) <= 2000
        assert "truncated" in text.lower()


async def test_create_checkpoint_is_a_named_manual_checkpoint(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    (workspace / "notes.md").write_text("notes, more\n", "utf-8")
    async with retrace_mcp(workspace, store) as mcp:
        text, out = await mcp.call("create_checkpoint", {"label": "before the big rename"})
        cp = out["checkpoint"]
        assert cp["label"] == "before the big rename"
        assert cp["kind"] == "manual"
        assert cp["filesChanged"] == 1
        assert cp["id"] in text
        _, listed = await mcp.call("list_checkpoints", {"limit": 1})
        assert ids(listed) == [cp["id"]]
        assert listed["checkpoints"][0]["session"] == "mcp"
        token = "ghp_" + "A1b2C3d4" * 5
        _, secret = await mcp.call("create_checkpoint", {"label": f"deploy with {token}"})
        assert token not in secret["checkpoint"]["label"]  # a model's words are redacted
        assert "blank" in await mcp.error("create_checkpoint", {"label": "   "})
    with Engine.open(workspace, store, readonly=True) as engine:
        assert engine.get(cp["id"]).parent == seeded.manual
        assert token not in engine.get(secret["checkpoint"]["id"]).label


async def test_restore_is_a_dry_run_unless_confirmed(seeded: Seeded, workspace: Path, store: Path) -> None:
    app = workspace / "src" / "app.py"
    async with retrace_mcp(workspace, store) as mcp:
        text, out = await mcp.call("restore_checkpoint", {"id": "HEAD", "confirm": True})
        assert out["outcome"] == "nothingToRestore" and out["target"] == seeded.manual
        assert "Nothing to restore" in text
        _, out = await mcp.call("show_checkpoint", {"id": "head"})
        assert out["checkpoint"]["id"] == seeded.manual

        text, out = await mcp.call("restore_checkpoint", {"id": seeded.write})
        assert out["applied"] is False
        assert out["outcome"] == "preview"
        plan = {f["path"]: f["action"] for f in out["files"]}
        assert plan == {"src/app.py": "overwrite", "logo.bin": "delete", "notes.md": "delete"}
        assert "confirm" in text
        assert app.read_text("utf-8").endswith("return 42\n")  # nothing changed

        text, out = await mcp.call("restore_checkpoint", {"id": seeded.write, "confirm": True})
        assert out["applied"] is True
        assert out["outcome"] == "applied"
        assert app.read_text("utf-8").endswith("return 1\n")
        assert not (workspace / "notes.md").exists()
        assert not (workspace / "logo.bin").exists()
        undo = out["undo"]
        assert undo and undo in text and "undo" in text.lower()

        # Undo is another restore.
        _, out = await mcp.call("restore_checkpoint", {"id": undo, "confirm": True})
        assert out["outcome"] == "applied"
        assert app.read_text("utf-8").endswith("return 42\n")
        assert (workspace / "logo.bin").read_bytes() == b"\x89PNG\x00\x01\x02binary"


async def test_conflicts_refuse_unless_resolved_per_file(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    app = workspace / "src" / "app.py"
    app.write_text("def answer():\n    return 'mine, unsaved in no checkpoint'\n", "utf-8")
    async with retrace_mcp(workspace, store) as mcp:
        _, preview = await mcp.call("restore_checkpoint", {"id": seeded.write})
        assert preview["conflicts"] == ["src/app.py"]
        text, out = await mcp.call("restore_checkpoint", {"id": seeded.write, "confirm": True})
        assert out["applied"] is False
        assert out["outcome"] == "conflict"
        assert out["conflicts"] == ["src/app.py"]
        assert "resolutions" in text
        assert "mine" in app.read_text("utf-8")  # refused: nothing changed
        assert (workspace / "notes.md").exists()

        _, out = await mcp.call(
            "restore_checkpoint",
            {"id": seeded.write, "confirm": True, "resolutions": {"src/app.py": "skip"}},
        )
        assert out["outcome"] == "applied"
        assert "mine" in app.read_text("utf-8")  # skipped, as asked
        assert not (workspace / "notes.md").exists()
        assert out["skipped"] == ["src/app.py"]

        _, out = await mcp.call(
            "restore_checkpoint",
            {"id": seeded.write, "confirm": True, "resolutions": {"src/app.py": "overwrite"}},
        )
        assert out["outcome"] == "applied"
        assert app.read_text("utf-8").endswith("return 1\n")


async def test_bad_requests_are_clear_errors_and_lose_nothing(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    async with retrace_mcp(workspace, store) as mcp:
        assert "limit" in await mcp.error("list_checkpoints", {"limit": 100_000})
        assert "limit" in await mcp.error("list_checkpoints", {"limit": 0})
        assert "limit" in await mcp.error("list_checkpoints", {"limit": "ten"})
        assert "nope" in await mcp.error("list_checkpoints", {"nope": 1})
        assert "kind" in await mcp.error("list_checkpoints", {"kind": "everything"})
        assert "zzzzzzzz" in await mcp.error("list_checkpoints", {"before": "zzzzzzzz"})
        assert "zzzzzzzz" in await mcp.error("show_checkpoint", {"id": "zzzzzzzz"})
        assert "id" in await mcp.error("show_checkpoint", {})
        assert "escape" in await mcp.error("show_checkpoint", {"id": seeded.edit, "path": "../escape.txt"})
        assert "/etc/passwd" in await mcp.error("show_checkpoint", {"id": seeded.edit, "path": "/etc/passwd"})
        assert "maxBytes" in await mcp.error("show_checkpoint", {"id": seeded.edit, "maxBytes": 10**12})
        assert "zzzzzzzz" in await mcp.error("restore_checkpoint", {"id": "zzzzzzzz", "confirm": True})
        assert "escape" in await mcp.error(
            "restore_checkpoint", {"id": seeded.write, "confirm": True, "paths": ["../escape.txt"]}
        )
        assert "escape" in await mcp.error(
            "restore_checkpoint", {"id": seeded.write, "confirm": True, "resolutions": {"../escape": "skip"}}
        )
        assert "paths" in await mcp.error("restore_checkpoint", {"id": seeded.write, "paths": [""]})
        assert "force" in await mcp.error(
            "restore_checkpoint", {"id": seeded.write, "confirm": True, "resolutions": {"x": "force"}}
        )
        assert "confirm" in await mcp.error("restore_checkpoint", {"id": seeded.write, "confirm": "yes"})
        assert "label" in await mcp.error("create_checkpoint", {"label": "x" * 5000})
        assert "no_such_tool" in await mcp.error("no_such_tool", {})
        # Still serving; nothing changed or lost.
        _, out = await mcp.call("list_checkpoints", {})
        assert ids(out) == [seeded.manual, seeded.edit, seeded.write, seeded.baseline]
    assert (workspace / "src" / "app.py").read_text("utf-8").endswith("return 42\n")
    assert not (workspace.parent / "escape.txt").exists()


async def test_a_missing_store_or_workspace_is_explained(relay_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    async with retrace_mcp(empty, tmp_path / "no-store") as mcp:
        message = await mcp.error("list_checkpoints", {})
        assert "no Retrace store" in message and "create_checkpoint" in message
        message = await mcp.error("restore_checkpoint", {"id": "abcd1234", "confirm": True})
        assert "no Retrace store" in message and "create_checkpoint" in message
        assert not (tmp_path / "no-store").exists()  # a refused restore creates nothing
        # A named checkpoint creates the store (its baseline first).
        (empty / "a.txt").write_text("a\n", "utf-8")
        _, out = await mcp.call("create_checkpoint", {"label": "first"})
        assert out["checkpoint"]["label"] == "first"
        _, listed = await mcp.call("list_checkpoints", {})
        assert [c["kind"] for c in listed["checkpoints"]] == ["manual", "baseline"]


def test_a_workspace_that_is_not_a_folder_stops_before_serving(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "retrace", "mcp", "--workspace", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""  # stdout is the protocol's: nothing else is ever written there
    assert proc.stderr.startswith("retrace: error: workspace is not a directory")


async def test_calls_at_once_are_answered_one_by_one(seeded: Seeded, workspace: Path, store: Path) -> None:
    (workspace / "notes.md").write_text("notes, again\n", "utf-8")
    async with retrace_mcp(workspace, store) as mcp:
        answers = await asyncio.gather(
            mcp.call("list_checkpoints", {}),
            mcp.call("create_checkpoint", {"label": "at once"}),
            mcp.call("show_checkpoint", {"id": seeded.edit}),
            mcp.call("restore_checkpoint", {"id": seeded.write}),
            mcp.call("list_checkpoints", {"kind": "manual"}),
        )
        assert answers[1][1]["checkpoint"]["label"] == "at once"
        _, listed = await mcp.call("list_checkpoints", {"kind": "manual"})
        assert [c["label"] for c in listed["checkpoints"]] == ["at once", "before refactor"]


async def test_hostile_names_stay_on_their_line(seeded: Seeded, workspace: Path, store: Path) -> None:
    name = "evil\nname\x1b[31m.txt"
    (workspace / name).write_text("x\n", "utf-8")
    async with retrace_mcp(workspace, store) as mcp:
        _, made = await mcp.call("create_checkpoint", {"label": "line one\nline two\x1b[2J"})
        text, out = await mcp.call("show_checkpoint", {"id": made["checkpoint"]["id"]})
        assert [f["path"] for f in out["files"]] == [name]  # exact in the structured content
        assert "\x1b" not in text
        assert "line one line two" in text
        assert all("name" not in line or "evil" in line for line in text.splitlines())
        text, _ = await mcp.call("restore_checkpoint", {"id": seeded.manual})
        assert "\x1b" not in text
        assert '"evil\\nname' in text


async def test_a_restore_while_another_agents_turn_runs_needs_proceed(
    seeded: Seeded, workspace: Path, store: Path
) -> None:
    from retrace.engine.store.events import TurnEvent

    with Engine.open(workspace, store, session_id="cli") as engine:
        engine.append_event(TurnEvent(turn_id="t-running", text="refactor the app"), session_id=AGENT_SESSION)
    app = workspace / "src" / "app.py"
    async with retrace_mcp(workspace, store) as mcp:
        _, out = await mcp.call("restore_checkpoint", {"id": seeded.write})  # a dry run only lists
        assert out["outcome"] == "preview"
        message = await mcp.error("restore_checkpoint", {"id": seeded.write, "confirm": True})
        assert "Claude Code" in message or "claude-code" in message
        assert app.read_text("utf-8").endswith("return 42\n")  # refused: nothing changed
        assert "proceed" in await mcp.error(
            "restore_checkpoint", {"id": seeded.write, "confirm": True, "whileAgentRuns": "yes"}
        )
        _, out = await mcp.call(
            "restore_checkpoint", {"id": seeded.write, "confirm": True, "whileAgentRuns": "proceed"}
        )
        assert out["outcome"] == "applied"
        assert app.read_text("utf-8").endswith("return 1\n")
