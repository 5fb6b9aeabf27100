"""``run_command``'s ``cwd`` and ``search_text``'s path in a multi-root workspace (real folders,
real shell, no engine, no model): a command starts in the folder (or sub-directory) its ``cwd``
names, validated by the folder rule (outside every folder, a file, ``..``: refused, nothing run);
a search of another folder answers with paths the model can use as given (``<folder>/path``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.folders import folders_prompt
from retrace.agent.terminal import TerminalSession
from retrace.agent.tools import ToolContext, ToolResult, execute
from retrace.engine.config import EngineConfig
from retrace.engine.folders import Folder


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    web, api = tmp_path / "web", tmp_path / "api"
    (web / "src").mkdir(parents=True)
    (web / "api").mkdir()  # a directory of the first folder named like the second folder
    (web / "src" / "i.ts").write_text("package = 1\n", "utf-8")
    (api / "pkg").mkdir(parents=True)
    (api / "main.go").write_text("package main\n", "utf-8")
    (api / "pkg" / "x.go").write_text("package pkg\n", "utf-8")
    return web.resolve(), api.resolve()


def context(web: Path, api: Path, **extra: Any) -> ToolContext:
    folders = (Folder("web", str(web)), Folder("api", str(api)))
    return ToolContext(workspace=web, engine_config=EngineConfig(), folders=folders, **extra)


async def run(ctx: ToolContext, tool: str, **tool_input: Any) -> ToolResult:
    return await execute(tool, tool_input, ctx)


CWDS = [
    # cwd as the model writes it → where the command starts ({web}/{api}: the roots)
    (None, "{web}"),
    ("api", "{api}"),
    ("api/pkg", "{api}/pkg"),
    ("web", "{web}"),
    ("web/src", "{web}/src"),
    ("src", "{web}/src"),  # no folder named: the first folder's, as every path
    ("{api}/pkg", "{api}/pkg"),
]


@pytest.mark.parametrize(("cwd", "where"), CWDS)
async def test_a_command_starts_where_cwd_names(
    roots: tuple[Path, Path], cwd: str | None, where: str
) -> None:
    web, api = roots
    args: dict[str, Any] = {"command": "pwd -P"}
    if cwd is not None:
        args["cwd"] = cwd.replace("{api}", str(api)).replace("{web}", str(web))
    result = await run(context(web, api), "run_command", **args)
    assert not result.is_error, result.output
    expected = where.replace("{api}", str(api)).replace("{web}", str(web))
    assert result.output.splitlines()[0] == expected
    assert result.changed_paths is None  # the engine detects what it changed, in every folder


REFUSED = [
    ("../x", "outside the workspace"),
    ("/elsewhere", "outside the workspace"),
    ("api/../web", "not a path inside"),
    ("api/main.go", "not a directory"),
    ("api/nothing", "does not exist"),
    ("", "empty"),
]


@pytest.mark.parametrize(("cwd", "words"), REFUSED)
async def test_a_bad_cwd_is_refused_and_nothing_runs(
    roots: tuple[Path, Path], tmp_path: Path, cwd: str, words: str
) -> None:
    web, api = roots
    marker = tmp_path / "ran"
    result = await run(context(web, api), "run_command", command=f"touch {marker}", cwd=cwd)
    assert result.is_error and words in result.output, result.output
    assert not marker.exists()


async def test_cwd_in_a_single_folder_workspace(roots: tuple[Path, Path]) -> None:
    web, _api = roots
    ctx = ToolContext(workspace=web, engine_config=EngineConfig())
    result = await run(ctx, "run_command", command="pwd -P", cwd="src")
    assert result.output.splitlines()[0] == str(web / "src")
    result = await run(ctx, "run_command", command="pwd -P", cwd="api")  # a directory, no folder
    assert result.output.splitlines()[0] == str(web / "api")


async def test_search_in_another_folder_names_its_paths_with_the_folder(roots: tuple[Path, Path]) -> None:
    web, api = roots
    ctx = context(web, api)
    found = await run(ctx, "search_text", pattern="package", path="api")
    assert not found.is_error, found.output
    assert found.output.splitlines() == ["api/main.go:1:package main", "api/pkg/x.go:1:package pkg"]
    deep = await run(ctx, "search_text", pattern="package", path="api/pkg")
    assert deep.output.splitlines() == ["api/pkg/x.go:1:package pkg"]
    first = await run(ctx, "search_text", pattern="package")
    assert first.output.splitlines() == ["src/i.ts:1:package = 1"]  # the first folder, as today
    assert (await run(ctx, "search_text", pattern="nothing here", path="api")).output == "No matches."
    # The paths it gives are usable as given.
    read = await run(ctx, "read_file", path="api/pkg/x.go")
    assert "package pkg" in read.output


def test_the_prompt_says_how() -> None:
    text = folders_prompt((Folder("web", "/w/web"), Folder("api", "/w/api")))
    assert "cwd" in text and "search_text" in text


@pytest.mark.skipif(sys.platform == "win32", reason="cmd.exe/PowerShell keep no state")
async def test_with_a_session_terminal_cwd_uses_its_environment_and_keeps_its_directory(
    roots: tuple[Path, Path],
) -> None:
    web, api = roots
    ctx = context(web, api, terminal=TerminalSession())
    assert ctx.terminal is not None
    await run(ctx, "run_command", command="cd src && export FOO=kept")
    there = await run(
        ctx, "run_command", command='pwd -P; echo "$FOO"; cd /; export FOO=changed', cwd="api/pkg"
    )
    assert there.output.splitlines()[:2] == [str(api / "pkg"), "kept"], there.output
    # The session's own directory and environment are as the call before left them.
    assert ctx.terminal.state.cwd == "src" and ctx.terminal.state.env["FOO"] == "kept"
    back = await run(ctx, "run_command", command='pwd -P; echo "$FOO"')
    assert back.output.splitlines()[:2] == [str(web / "src"), "kept"], back.output
