"""The tools on a real temp workspace (no engine, no model): paths, errors, caps, processes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.process_support import dies

from retrace.agent.tools import TOOLS, ToolContext, ToolResult, execute, tool_schemas
from retrace.agent.tools import search_text as search_module
from retrace.engine.config import EngineConfig
from retrace.offline.validation import validate_tools

from .conftest import APP_PY, make_workspace


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        workspace=make_workspace(tmp_path), engine_config=EngineConfig(), output_cap_bytes=2000
    )


async def run(ctx: ToolContext, tool: str, **tool_input: Any) -> ToolResult:
    return await execute(tool, tool_input, ctx)


def test_schemas_are_valid_tool_definitions() -> None:
    schemas = tool_schemas()
    validate_tools(schemas)
    assert [s["name"] for s in schemas] == list(TOOLS)
    edit = next(s for s in schemas if s["name"] == "edit_file")
    assert edit["input_schema"]["required"] == ["path", "old_string", "new_string"]
    assert edit["input_schema"]["additionalProperties"] is False


async def test_read_file_numbers_lines_and_windows(ctx: ToolContext) -> None:
    result = await run(ctx, "read_file", path="src/app.py")
    assert not result.is_error
    assert result.output.splitlines()[0] == "     1\tdef main():"
    assert result.changed_paths == []
    window = await run(ctx, "read_file", path="src/app.py", offset=2, limit=1)
    assert window.output.splitlines() == [
        '     2\t    print("hello")',
        "[lines 2-2 of 6; use offset/limit to read more]",
    ]
    past = await run(ctx, "read_file", path="src/app.py", offset=99)
    assert past.is_error
    assert past.output == "offset 99 is past the end of src/app.py (6 lines)"


async def test_read_file_refusals(ctx: ToolContext, tmp_path: Path) -> None:
    (ctx.workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    binary = await run(ctx, "read_file", path="blob.bin")
    assert not binary.is_error
    assert binary.output == "blob.bin is a binary file (30 bytes); its content is not shown."
    assert (await run(ctx, "read_file", path="nope.txt")).output == "nope.txt does not exist"
    assert "is a directory" in (await run(ctx, "read_file", path="src")).output
    (tmp_path / "secret.txt").write_text("secret")
    outside = await run(ctx, "read_file", path="../secret.txt")
    assert outside.is_error
    assert "is outside the workspace" in outside.output
    assert (
        "is outside the workspace" in (await run(ctx, "read_file", path=str(tmp_path / "secret.txt"))).output
    )
    os.symlink(tmp_path / "secret.txt", ctx.workspace / "link.txt")
    linked = await run(ctx, "read_file", path="link.txt")
    assert linked.is_error
    assert "symlink" in linked.output
    missing_field = await run(ctx, "read_file")
    assert missing_field.is_error
    assert missing_field.output == "invalid input for read_file: path: Field required"
    unknown = await run(ctx, "delete_everything")
    assert unknown.is_error
    assert unknown.output.startswith("unknown tool 'delete_everything'")


async def test_read_file_caps_huge_output(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("".join(f"line {i} " + "x" * 50 + "\n" for i in range(5000)))
    result = await run(ctx, "read_file", path="big.txt")
    assert len(result.output.encode()) < 2300
    assert "bytes omitted (output capped at 2000 bytes)" in result.output


async def test_list_files_respects_ignore_rules(ctx: ToolContext) -> None:
    ws = ctx.workspace
    (ws / ".gitignore").write_text("*.log\nsecret/\n")
    (ws / "debug.log").write_text("x")
    (ws / "secret").mkdir()
    (ws / "secret" / "key.txt").write_text("x")
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("x")
    (ws / "node_modules" / ".package-lock.json").write_text("{}")  # npm's marker
    listing = (await run(ctx, "list_files")).output.splitlines()
    assert listing == [".gitignore", "README.md", "notes.txt", "src/app.py", "src/util.py"]
    assert (await run(ctx, "list_files", path="src")).output.splitlines() == ["src/app.py", "src/util.py"]
    assert (await run(ctx, "list_files", glob="*.py")).output.splitlines() == ["src/app.py", "src/util.py"]
    assert (await run(ctx, "list_files", glob="*.rs")).output == "No files found."
    assert "excluded" in (await run(ctx, "list_files", path="node_modules")).output


@pytest.mark.parametrize("ripgrep", [True, False])
async def test_search_text(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, ripgrep: bool) -> None:
    if not ripgrep:
        monkeypatch.setattr(search_module.shutil, "which", lambda _name: None)
    elif search_module.shutil.which("rg") is None:
        pytest.skip("ripgrep not installed")
    ws = ctx.workspace
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "x.py").write_text("def main(): pass\n")
    (ws / "node_modules" / ".package-lock.json").write_text("{}")  # npm's marker
    (ws / "data.bin").write_bytes(b"\x00def main\x00")
    result = await run(ctx, "search_text", pattern=r"def \w+\(")
    assert result.output.splitlines() == ["src/app.py:1:def main():", "src/util.py:1:def add(a, b):"]
    only_util = await run(ctx, "search_text", pattern="return", path="src", glob="util.py")
    assert only_util.output == "src/util.py:2:    return a + b"
    assert (await run(ctx, "search_text", pattern="zebra")).output == "No matches."
    bad = await run(ctx, "search_text", pattern="(unclosed")
    assert bad.is_error
    assert bad.output.startswith("invalid regular expression '(unclosed'")


async def test_write_file(ctx: ToolContext) -> None:
    created = await run(ctx, "write_file", path="deep/new/file.txt", content="héllo\n")
    assert created.output == "Created deep/new/file.txt (7 bytes)."
    assert created.changed_paths == ["deep/new/file.txt"]
    assert (ctx.workspace / "deep/new/file.txt").read_text() == "héllo\n"
    script = ctx.workspace / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    again = await run(ctx, "write_file", path="run.sh", content="echo 2\n")
    assert again.output.startswith("Overwrote run.sh")
    assert script.stat().st_mode & 0o777 == 0o755  # the executable bit survives
    git = await run(ctx, "write_file", path=".git/config", content="x")
    assert git.is_error
    assert "inside a .git directory" in git.output
    dirty = ToolContext(ctx.workspace, ctx.engine_config, dirty_paths=frozenset({"notes.txt"}))
    refused = await execute("write_file", {"path": "./notes.txt", "content": "x"}, dirty)
    assert refused.is_error
    assert refused.output == "notes.txt has unsaved changes in the editor; not overwriting"
    assert (ctx.workspace / "notes.txt").read_text() == "remember the milk\n"
    assert refused.changed_paths == []


async def test_edit_file(ctx: ToolContext) -> None:
    app = ctx.workspace / "src/app.py"
    ambiguous = await run(ctx, "edit_file", path="src/app.py", old_string="main", new_string="start")
    assert ambiguous.is_error
    assert ambiguous.output == "old_string occurs 3 times in src/app.py; add context or set replace_all"
    missing = await run(ctx, "edit_file", path="src/app.py", old_string="def nope", new_string="x")
    assert (
        missing.output
        == "old_string not found in src/app.py; it must match the file exactly (whitespace included)"
    )
    no_file = await run(ctx, "edit_file", path="src/none.py", old_string="a", new_string="b")
    assert no_file.output == "src/none.py does not exist; use write_file to create it"
    same = await run(ctx, "edit_file", path="src/app.py", old_string="main", new_string="main")
    assert same.output == "old_string and new_string are identical; nothing to change"
    assert app.read_text() == APP_PY

    one = await run(ctx, "edit_file", path="src/app.py", old_string="def main():", new_string="def start():")
    assert one.output == "Edited src/app.py: replaced 1 occurrence at line 1."
    assert one.changed_paths == ["src/app.py"]
    every = await run(
        ctx, "edit_file", path="src/app.py", old_string="main", new_string="go", replace_all=True
    )
    assert every.output == "Edited src/app.py: replaced 2 occurrences."
    assert app.read_text() == APP_PY.replace("def main():", "def start():").replace("main", "go")

    crlf = ctx.workspace / "win.txt"
    crlf.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await run(ctx, "edit_file", path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert crlf.read_bytes() == b"1\r\n2\r\nthree\r\n"
    (ctx.workspace / "img.bin").write_bytes(b"\xff\xfe\x00")
    binary = await run(ctx, "edit_file", path="img.bin", old_string="a", new_string="b")
    assert binary.output == "img.bin is not a UTF-8 text file; edit_file only edits text"


async def test_run_command_output_exit_code_and_cap(ctx: ToolContext) -> None:
    ok = await run(ctx, "run_command", command="echo hi; echo err >&2; touch made.txt")
    assert ok.output == "hi\nerr\n[exit code 0]"
    assert not ok.is_error
    assert ok.changed_paths is None  # the engine finds what a shell command changed
    assert (ctx.workspace / "made.txt").exists()
    failed = await run(ctx, "run_command", command="exit 3")
    assert failed.is_error
    assert failed.output == "[exit code 3]"
    big = await run(ctx, "run_command", command="for i in $(seq 1 20000); do echo line-$i; done")
    assert big.output.startswith("line-1\nline-2\n")
    assert "bytes omitted (output capped at 2000 bytes)" in big.output
    assert big.output.endswith("line-20000\n[exit code 0]")
    assert len(big.output.encode()) < 2300


def _read_pid(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


async def _wait_for_pid(path: Path) -> int:
    for _ in range(200):
        pid = _read_pid(path)
        if pid is not None:
            return pid
        await asyncio.sleep(0.05)
    raise AssertionError("the command never wrote its pid")


async def test_run_command_timeout_kills_the_process_group(ctx: ToolContext) -> None:
    start = time.monotonic()
    result = await run(
        ctx, "run_command", command="sleep 60 & echo $! > bg.pid; echo waiting; sleep 60", timeout_s=1
    )
    assert time.monotonic() - start < 30
    assert result.is_error
    assert result.output.startswith("waiting\n[timed out after 1s; the command and everything it started ")
    assert "(SIGTERM, then SIGKILL); stopped: pid " in result.output
    assert "`sleep 60` (SIGTERM)" in result.output
    pid = int((ctx.workspace / "bg.pid").read_text())
    assert await dies(pid)


async def test_run_command_cancel_kills_the_process_group(ctx: ToolContext) -> None:
    task = asyncio.create_task(run(ctx, "run_command", command="sleep 60 & echo $! > bg.pid; sleep 60"))
    pid = await _wait_for_pid(ctx.workspace / "bg.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await dies(pid)
