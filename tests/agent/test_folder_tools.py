"""The file tools in a multi-root workspace (real folders on disk, no engine, no model): which
folder a path names, what each write reports (the first folder's ``changed_paths``, the others'
``folder_paths``), and every refusal the single-folder rule makes, made in each folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.oracles import file_bytes

from retrace.agent.folders import folders_prompt, route
from retrace.agent.tools import ToolContext, ToolResult, execute
from retrace.engine.config import EngineConfig
from retrace.engine.folders import Folder


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    web, api = tmp_path / "web", tmp_path / "api"
    (web / "src").mkdir(parents=True)
    (web / "api").mkdir()  # a directory of the first folder named like the second folder
    (web / "api" / "shadow.txt").write_text("web's api dir\n", "utf-8")
    (web / "src" / "i.ts").write_text("a = 1\n", "utf-8")
    api.mkdir()
    (api / "main.go").write_text("package main\n", "utf-8")
    return web.resolve(), api.resolve()


def context(web: Path, api: Path, **extra: Any) -> ToolContext:
    folders = (Folder("web", str(web)), Folder("api", str(api)))
    return ToolContext(workspace=web, engine_config=EngineConfig(), folders=folders, **extra)


async def run(ctx: ToolContext, tool: str, **tool_input: Any) -> ToolResult:
    return await execute(tool, tool_input, ctx)


WRITES = [
    # path as the model writes it, folder written (web/api), path in it
    ("src/new.ts", "web", "src/new.ts"),
    ("web/src/new.ts", "web", "src/new.ts"),
    ("./web//src/new.ts", "web", "src/new.ts"),
    ("api/new.go", "api", "new.go"),
    ("api/pkg/deep/x.go", "api", "pkg/deep/x.go"),
    ("{api}/abs.go", "api", "abs.go"),
    ("{web}/abs.ts", "web", "abs.ts"),
]


@pytest.mark.parametrize(("raw", "where", "rel"), WRITES)
async def test_write_goes_to_the_named_folder(
    roots: tuple[Path, Path], raw: str, where: str, rel: str
) -> None:
    web, api = roots
    path = raw.replace("{api}", str(api)).replace("{web}", str(web))
    result = await run(context(web, api), "write_file", path=path, content="x\n")
    assert not result.is_error, result.output
    folder = web if where == "web" else api
    assert (folder / rel).read_text("utf-8") == "x\n"
    if where == "web":
        assert (result.changed_paths, result.folder_paths) == ([rel], None)
    else:
        assert (result.changed_paths, result.folder_paths) == ([], {str(api): [rel]})
        assert f"api/{rel}" in result.output


REFUSED = [
    ("api/../web/x", "not a path inside"),
    ("api/..", "not a path inside"),
    ("api", "folder itself"),
    ("web", "folder itself"),
    ("api/.git/config", ".git"),
    ("/elsewhere/x", "outside the workspace"),
    ("../x", "outside the workspace"),
]


@pytest.mark.parametrize(("raw", "words"), REFUSED)
async def test_refused_everywhere(roots: tuple[Path, Path], raw: str, words: str) -> None:
    web, api = roots
    before = {root: file_bytes(root) for root in roots}
    result = await run(context(web, api), "write_file", path=raw, content="x\n")
    assert result.is_error and words in result.output, result.output
    assert {root: file_bytes(root) for root in roots} == before


async def test_symlink_out_of_the_other_folder_is_refused(roots: tuple[Path, Path], tmp_path: Path) -> None:
    web, api = roots
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, api / "link")
    result = await run(context(web, api), "write_file", path="api/link/x", content="x\n")
    assert result.is_error and "outside" in result.output
    assert not (outside / "x").exists()


async def test_unsaved_file_of_the_other_folder_is_not_overwritten(roots: tuple[Path, Path]) -> None:
    web, api = roots
    ctx = context(web, api, folder_dirty={str(api): frozenset({"main.go"})})
    result = await run(ctx, "edit_file", path="api/main.go", old_string="main", new_string="x")
    assert result.is_error and "unsaved" in result.output
    assert (api / "main.go").read_text("utf-8") == "package main\n"


async def test_read_edit_list_search_in_the_other_folder(roots: tuple[Path, Path]) -> None:
    web, api = roots
    ctx = context(web, api)
    read = await run(ctx, "read_file", path="api/main.go")
    assert "package main" in read.output and not read.is_error
    edit = await run(ctx, "edit_file", path="api/main.go", old_string="main", new_string="server")
    assert edit.folder_paths == {str(api): ["main.go"]} and edit.changed_paths == []
    listing = await run(ctx, "list_files", path="api")  # named with its folder: usable as given
    assert listing.output.splitlines() == ["api/main.go"], listing.output
    assert (await run(ctx, "list_files", path="web/src")).output.splitlines() == ["src/i.ts"]
    assert "src/i.ts" in (await run(ctx, "list_files", path="web")).output.splitlines()
    assert (await run(ctx, "list_files", path="api", glob="*.md")).output == "No files found."
    search = await run(
        ctx, "search_text", pattern="package", path="api"
    )  # tests/agent/test_folder_commands.py
    assert search.output.splitlines() == ["api/main.go:1:package server"], search.output


async def test_one_folder_is_the_single_folder_agent(roots: tuple[Path, Path]) -> None:
    """No folders (or one): ``api/…`` is a directory of the workspace, as always."""
    web, _api = roots
    ctx = ToolContext(workspace=web, engine_config=EngineConfig())
    result = await run(ctx, "write_file", path="api/shadow.txt", content="y\n")
    assert (result.changed_paths, result.folder_paths) == (["api/shadow.txt"], None)
    assert (web / "api" / "shadow.txt").read_text("utf-8") == "y\n"


def test_route_and_prompt() -> None:
    folders = (Folder("web", "/w/web"), Folder("api", "/w/api"))
    assert route(folders[:1], "api/x") is None
    assert route(folders, "src/x") is None
    assert route(folders, "/nowhere/x") is None  # the first folder's rule refuses it, as today
    routed = route(folders, "api/x")
    assert routed is not None and (routed.folder.name, routed.rel) == ("api", "x")
    assert folders_prompt(folders[:1]) == ""
    text = folders_prompt(folders)
    assert "- web/ → /w/web (first)" in text and "- api/ → /w/api" in text
