"""Git plumbing run by Retrace executes nothing of the repository's: no hook, no fsmonitor, no
clean/smudge filter, no external diff or textconv driver.

A real repository with EVERY hook name git knows installed (each one appends its name to a
marker file), an fsmonitor hook, a filter, a diff driver and an external diff configured for
every path through ``.gitattributes`` and the repository's own config. Then every command that
runs git — ``export --branch``, ``export --patch``, the per-turn mirror of ``retrace run`` and
``attribution`` — must leave the marker file absent.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE, Cli
from tests.handoff.git_support import commit_all, git, init_repo

# githooks(5), git 2.39 .. 2.47: every hook name, whether or not plumbing is known to run it.
HOOKS = [
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
]


def _script(path: Path, name: str, marker: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "{name}" >> "{marker}"\nexit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def booby_trapped(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose every hook, filter and driver appends to ``marker`` when run."""
    marker = tmp_path / "marker.txt"
    root = init_repo(tmp_path / "repo")
    (root / "README.md").write_text("# demo\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    commit_all(root, "initial")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        _script(hooks / name, name, marker)
    # A second hooks folder named by the repository's config (core.hooksPath) gets the same.
    custom = tmp_path / "custom-hooks"
    custom.mkdir()
    for name in HOOKS:
        _script(custom / name, f"hooksPath:{name}", marker)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("fsmonitor", "clean", "smudge", "textconv", "extdiff"):
        _script(tools / name, name, marker)
    for key, value in (
        ("core.hooksPath", str(custom)),
        ("core.fsmonitor", str(tools / "fsmonitor")),
        ("filter.trap.clean", str(tools / "clean")),
        ("filter.trap.smudge", str(tools / "smudge")),
        ("diff.trap.textconv", str(tools / "textconv")),
        ("diff.trap.command", str(tools / "extdiff")),
        ("diff.external", str(tools / "extdiff")),
    ):
        git(root, "config", key, value)
    (root / ".gitattributes").write_text("* filter=trap diff=trap\n")
    # Sanity: the traps are live (git's own porcelain runs them).
    git(root, "add", ".gitattributes")
    assert marker.exists(), "the filter trap did not fire under git add"
    marker.unlink()
    return root, marker


def _cli(root: Path, tmp_path: Path) -> Cli:
    assert RETRACE.exists()
    c = Cli(root, tmp_path / "store")
    c.env = {k: v for k, v in c.env.items() if not k.startswith(("GIT_", "ANTHROPIC_"))}
    c("init")
    return c


def _fired(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


def test_export_and_attribution_run_no_hook_filter_or_driver(
    booby_trapped: tuple[Path, Path], tmp_path: Path
) -> None:
    root, marker = booby_trapped
    cli = _cli(root, tmp_path)
    a = cli("checkpoint", "--label", "a").stdout.strip()
    (root / "src" / "app.py").write_text("x = 2\n")
    (root / "new.txt").write_text("new\n")
    b = cli("checkpoint", "--label", "b").stdout.strip()
    assert _fired(marker) == []
    cli.json("export", b, "--branch", "retrace/trap")
    assert _fired(marker) == [], "export --branch"
    cli.json("export", f"{a}..{b}", "--patch", str(tmp_path / "patches"))
    assert _fired(marker) == [], "export --patch"
    cli.json("attribution", "--to", b)
    assert _fired(marker) == [], "attribution"
    # The branch really was written (the traps did not merely make git fail quietly).
    assert git(root, "rev-parse", "--verify", "refs/heads/retrace/trap").strip()


def test_the_per_turn_mirror_runs_no_hook(booby_trapped: tuple[Path, Path], tmp_path: Path) -> None:
    root, marker = booby_trapped
    cli = _cli(root, tmp_path)
    cli.env["RETRACE_FAKE_MODEL"] = "e2e"
    out = cli("run", "make the e2e changes", "--mirror-git").stdout
    assert "git mirror refs/heads/retrace/" in out
    assert _fired(marker) == []
