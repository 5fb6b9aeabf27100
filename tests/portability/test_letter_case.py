"""Where the file system ignores letter case (macOS, Windows), one file has one name.

The agent asking for ``readme.md`` while ``README.md`` exists must write THAT file and report it
as ``README.md``: otherwise the checkpoint would record a second path for the same file, and a
``.GIT/config`` would slip past the "never write inside .git" rule. Simulated by setting
``sys.platform`` to ``darwin``; on Linux's case-sensitive disk the existing file is found by the
same directory listing the real platform would use.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrace.agent.tools import ToolContext, execute
from retrace.engine import workspace as workspace_module
from retrace.engine.config import EngineConfig
from retrace.engine.workspace import disk_case


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    (ws / "Docs").mkdir(parents=True)
    (ws / "Docs" / "README.md").write_text("old\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    return ToolContext(workspace=ws, engine_config=EngineConfig())


def test_disk_case_spells_existing_components_as_the_disk_does(ctx: ToolContext) -> None:
    assert disk_case(ctx.workspace, "docs/readme.md") == "Docs/README.md"
    assert disk_case(ctx.workspace, "Docs/README.md") == "Docs/README.md"
    assert disk_case(ctx.workspace, "DOCS/new/File.txt") == "Docs/new/File.txt"  # new part kept
    assert disk_case(ctx.workspace, ".GIT/CONFIG") == ".git/config"


def test_an_exact_match_wins_over_a_case_variant(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1")
    (tmp_path / "A.txt").write_text("2")  # possible on Linux only
    assert disk_case(tmp_path, "A.txt") == "A.txt"
    assert disk_case(tmp_path, "a.TXT") == "a.TXT"  # ambiguous: left as given


@pytest.mark.parametrize(
    ("platform", "written", "readme_after"),
    [
        ("darwin", "Docs/README.md", "new\n"),  # one file, spelled as on disk
        ("linux", "docs/readme.md", "old\n"),  # case tells two files apart
    ],
    ids=["macos-writes-the-existing-file", "linux-writes-a-second-file"],
)
async def test_write_file_resolves_letter_case_as_the_platform_does(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, platform: str, written: str, readme_after: str
) -> None:
    monkeypatch.setattr(workspace_module.sys, "platform", platform)
    result = await execute("write_file", {"path": "docs/readme.md", "content": "new\n"}, ctx)
    assert not result.is_error, result.output
    assert result.changed_paths == [written]
    assert (ctx.workspace / written).read_text() == "new\n"
    assert (ctx.workspace / "Docs" / "README.md").read_text() == readme_after
    folders = {p.name for p in ctx.workspace.iterdir() if p.name.lower() == "docs"}
    assert folders == {"Docs", Path(written).parts[0]}


async def test_on_macos_a_case_variant_of_git_is_refused(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_module.sys, "platform", "darwin")
    result = await execute("write_file", {"path": ".GIT/config", "content": "[core]\nhooksPath=/tmp\n"}, ctx)
    assert result.is_error and ".git" in result.output
    assert (ctx.workspace / ".git" / "config").read_text() == "[core]\n"


NFC, NFD = "caf\u00e9.md", "cafe\u0301.md"  # one name to macOS: é composed, e + combining accent


@pytest.mark.parametrize(
    ("platform", "written"),
    [
        ("darwin", f"Docs/{NFD}"),  # APFS/HFS+ find the decomposed name: one file, spelled as on disk
        ("win32", f"Docs/{NFC}"),  # NTFS compares code points: another name (case still folded)
        ("linux", f"docs/{NFC}"),  # exact bytes
    ],
    ids=["macos-one-name-whatever-the-normalization", "windows-code-points", "linux-exact"],
)
async def test_unicode_normalization_is_resolved_as_the_platform_does(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, platform: str, written: str
) -> None:
    (ctx.workspace / "Docs" / NFD).write_text("saved by a Mac app\n")
    monkeypatch.setattr(workspace_module.sys, "platform", platform)
    monkeypatch.setattr(workspace_module.oscompat.sys, "platform", platform)
    result = await execute(
        "write_file", {"path": f"docs/{NFC.upper()}".replace(".MD", ".md"), "content": "new\n"}, ctx
    )
    assert not result.is_error, result.output
    [changed] = result.changed_paths or []
    assert changed.casefold() == written.casefold(), (changed, written)
    assert (ctx.workspace / "Docs" / NFD).read_text() == (
        "new\n" if platform == "darwin" else "saved by a Mac app\n"
    )
