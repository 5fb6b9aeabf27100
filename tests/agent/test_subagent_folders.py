"""A subagent in a multi-root workspace works in a copy of the FIRST folder only: what it writes
under another folder's name must never land in the first folder as a stray directory (the
parent reads ``api/main.go`` as the folder ``api``; the child's copy has no such folder, so its
"edit" would be a new file built from nothing). The merge refuses such a path as a conflict with
the reason, writes nothing for it and still applies the rest; a directory the first folder really
has under that name is the first folder's, as in the child's copy. The child is told where it
works, and the parent's task tool says so too."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracles import file_bytes

from retrace.agent.subagents.apply import NetChange, merge_into
from retrace.agent.subagents.child import brief
from retrace.agent.subagents.merge import Version
from retrace.agent.tools.base import ToolContext
from retrace.agent.tools.task import TaskInput
from retrace.engine.config import EngineConfig
from retrace.engine.folders import Folder

NEW = Version(b"package main\n\nfunc main() {}\n")


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    web, api, docs = tmp_path / "web", tmp_path / "api", tmp_path / "Docs"
    (web / "src").mkdir(parents=True)
    (web / "src" / "i.ts").write_text("a = 1\n", "utf-8")
    (web / "docs").mkdir()  # the first folder's own directory, named like the third folder
    (web / "docs" / "guide.md").write_text("# guide\n", "utf-8")
    api.mkdir()
    (api / "main.go").write_text("package main\n", "utf-8")
    docs.mkdir()
    return web.resolve(), api.resolve(), docs.resolve()


def context(web: Path, api: Path, docs: Path) -> ToolContext:
    folders = (Folder("web", str(web)), Folder("api", str(api)), Folder("Docs", str(docs)))
    return ToolContext(workspace=web, engine_config=EngineConfig(), folders=folders)


@pytest.mark.parametrize(
    "rel",
    ["api/main.go", "api/pkg/new.go", "api/.env.example"],
)
def test_a_path_under_another_folders_name_is_refused_and_the_rest_applied(
    roots: tuple[Path, Path, Path], rel: str
) -> None:
    web, api, docs = roots
    before_api, before_docs = file_bytes(api), file_bytes(docs)
    change = NetChange({rel: (None, NEW), "src/i.ts": (Version(b"a = 1\n"), Version(b"a = 2\n"))})
    merged = merge_into(context(web, api, docs), change)
    assert merged.written == ["src/i.ts"], "the first folder's own change still lands"
    assert [c.path for c in merged.conflicts] == [rel]
    reason = merged.conflicts[0].reason
    assert "api" in reason and "web" in reason and "subagent" in reason, reason
    assert not (web / "api").exists(), "no stray directory named like another folder"
    assert (file_bytes(api), file_bytes(docs)) == (before_api, before_docs), "the other folders untouched"


def test_a_directory_the_first_folder_really_has_is_the_first_folders(roots: tuple[Path, Path, Path]) -> None:
    web, api, docs = roots
    change = NetChange({"docs/guide.md": (Version(b"# guide\n"), Version(b"# guide, better\n"))})
    merged = merge_into(context(web, api, docs), change)
    assert (merged.written, merged.conflicts) == (["docs/guide.md"], [])
    assert (web / "docs" / "guide.md").read_bytes() == b"# guide, better\n"
    assert file_bytes(docs) == {}


def test_one_folder_merges_as_always(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = ToolContext(workspace=ws.resolve(), engine_config=EngineConfig())
    merged = merge_into(ctx, NetChange({"api/main.go": (None, NEW)}))
    assert (merged.written, merged.conflicts) == (["api/main.go"], [])


def test_the_child_is_told_where_it_works(roots: tuple[Path, Path, Path]) -> None:
    web, api, docs = roots
    args = TaskInput(description="tidy", prompt="Tidy the code.")
    folders = context(web, api, docs).folders
    told = brief(args, folders)
    assert "web" in told and "api" in told and "Docs" in told
    assert "only" in told
    assert brief(args, ()) == brief(args, folders[:1]), "one folder: the brief as always"
    assert "api" not in brief(args, ())
