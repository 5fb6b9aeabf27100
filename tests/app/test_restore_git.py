"""Git-aware restores: refused when HEAD or the branch moved, unless files-only or park-first;
the commands after the target whose side effects no restore undoes are named. Real git
repositories, the real command line as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.cli_support import Cli
from tests.handoff.git_support import git_text as git

from retrace.app.restore_git import GitMoved, check_git, compare, side_effects_after
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.gitstate import GitState

A = "a" * 40
B = "b" * 40


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "app.py").write_text("v = 1\n")
    git(ws, "add", "app.py")
    git(ws, "commit", "-q", "-m", "one")
    return ws


@pytest.mark.parametrize(
    ("target", "current", "head_moved", "branch_moved"),
    [
        (GitState(A, "main", False, False), GitState(A, "main", False, True), False, False),
        (GitState(A, "main", False, False), GitState(B, "main", False, False), True, False),
        (GitState(A, "main", False, False), GitState(A, "feature", False, False), False, True),
        (GitState(A, "main", False, False), GitState(A, None, True, False), False, True),
        (GitState(None, "main", False, False), GitState(A, "main", False, False), True, False),
    ],
)
def test_compare(target: GitState, current: GitState, head_moved: bool, branch_moved: bool) -> None:
    info = compare(target, current)
    assert info is not None and (info.head_moved, info.branch_moved) == (head_moved, branch_moved)
    assert compare(None, current) is None and compare(target, None) is None


def test_moved_refuses_a_code_restore_only(ws: Path, tmp_path: Path) -> None:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as engine:
        before = engine.checkpoint("before")
        git(ws, "switch", "-q", "-c", "feature")
        (ws / "app.py").write_text("v = 2\n")
        engine.checkpoint("after")
        with pytest.raises(GitMoved) as err:
            check_git(engine, before.id, "code", dry_run=False, choice=None)
        assert err.value.code == "gitMoved"
        assert "branch main" in str(err.value) and "branch feature" in str(err.value)
        for mode, dry in (("code", True), ("conversation", False)):
            info = check_git(engine, before.id, mode, dry_run=dry, choice=None)
            assert info is not None and info.branch_moved and info.target_branch == "main"
        assert check_git(engine, before.id, "both", dry_run=False, choice="filesOnly") is not None


def test_side_effects_after_the_target_are_named(ws: Path, tmp_path: Path) -> None:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as engine:
        engine.checkpoint("run_command: pip install early", kind="tool", tool="run_command")
        target = engine.checkpoint("target")
        engine.checkpoint("run_command: npm test && pip install requests", kind="tool", tool="run_command")
        engine.checkpoint("docker run x", kind="tool", tool="Bash")
        engine.checkpoint("run_command: ls /etc", kind="tool", tool="run_command")
        engine.checkpoint("write_file: docker run", kind="tool", tool="write_file")
        effects = side_effects_after(engine, target.id)
        assert [(e.command, e.kinds) for e in effects] == [
            ("docker run x", ["containers"]),
            ("pip install requests", ["installs packages outside the workspace"]),
        ]


@pytest.mark.slow
def test_the_command_line_asks_then_restores_files_only_or_parks_first(ws: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    cli = Cli(ws, store)
    cli("init")
    before = cli.json("checkpoint", "--label", "before switch")["id"]
    git(ws, "switch", "-q", "-c", "feature")
    (ws / "app.py").write_text("v = 2\n")
    git(ws, "commit", "-q", "-am", "two")
    cli("checkpoint", "--label", "after switch")

    proc = cli("restore", before, code=1)
    assert "git moved since this checkpoint" in proc.stderr and "--git files-only | park-first" in proc.stderr
    assert (ws / "app.py").read_text() == "v = 2\n", "a refusal changes nothing"
    dry = json.loads(cli("restore", before, "--dry-run", "--json").stdout)
    assert dry["git"]["branchMoved"] and dry["git"]["targetBranch"] == "main"
    assert dry["git"]["currentBranch"] == "feature"

    cli("restore", before, "--git", "park-first")
    assert (ws / "app.py").read_text() == "v = 1\n"
    branches = git(ws, "branch", "--list", "retrace/parked-*", "--format=%(refname:short)").splitlines()
    assert len(branches) == 1
    assert git(ws, "show", f"{branches[0]}:app.py") == "v = 2"
    assert git(ws, "rev-parse", "--abbrev-ref", "HEAD") == "feature", "git's HEAD is left alone"

    (ws / "app.py").write_text("v = 3\n")
    cli("checkpoint", "--label", "three")
    cli("restore", before, "--git", "files-only")
    assert (ws / "app.py").read_text() == "v = 1\n"
    assert len(git(ws, "branch", "--list", "retrace/parked-*").splitlines()) == 1


def test_the_stamped_kinds_win_over_the_label(ws: Path, tmp_path: Path) -> None:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as engine:
        target = engine.checkpoint("target")
        # The label was cut at 200 characters: the stamp made from the whole command still counts.
        engine.checkpoint(
            "run_command: " + "x" * 190,
            kind="tool",
            tool="run_command",
            meta={"sideEffects": ["git push", "bogus"]},
        )
        (effect,) = side_effects_after(engine, target.id)
        assert effect.kinds == ["git push"] and effect.command.startswith("xxx")
