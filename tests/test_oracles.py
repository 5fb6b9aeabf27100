"""The disk oracles of ``tests/oracles.py`` see what their docstrings promise (and only that):
each change below must change the reading of every oracle marked as seeing it, so a test built
on an oracle can fail for that change."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.oracles import entries, entries_and_modes, entry_hashes, file_bytes, inodes

ORACLES: dict[str, Callable[[Path], object]] = {
    "file_bytes": file_bytes,
    "entries": entries,
    "entry_hashes": entry_hashes,
    "entries_and_modes": entries_and_modes,
    "inodes": inodes,
}


def _sample(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_bytes(b"a = 1\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    os.symlink("src/a.py", root / "link")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    return root


def _edit(root: Path) -> None:
    (root / "src" / "a.py").write_bytes(b"a = 2\n")


def _new_file(root: Path) -> None:
    (root / "src" / "b.py").write_bytes(b"")


def _chmod(root: Path) -> None:
    os.chmod(root / "run.sh", 0o644)


def _retarget(root: Path) -> None:
    os.symlink("run.sh", root / "link.new")  # made while the old one lives: another inode
    os.replace(root / "link.new", root / "link")


def _empty_dir(root: Path) -> None:
    (root / "empty").mkdir()


def _recreate(root: Path) -> None:
    (root / "run.sh.new").write_bytes((root / "run.sh").read_bytes())  # another inode, same bytes
    os.chmod(root / "run.sh.new", 0o755)
    os.replace(root / "run.sh.new", root / "run.sh")


def _git(root: Path) -> None:
    (root / ".git" / "HEAD").write_bytes(b"ref: refs/heads/other\n")


CHANGES: list[tuple[Callable[[Path], None], set[str]]] = [
    (_edit, {"file_bytes", "entries", "entry_hashes", "entries_and_modes"}),
    (_new_file, {"file_bytes", "entries", "entry_hashes", "entries_and_modes", "inodes"}),
    (_chmod, {"entries", "entry_hashes", "entries_and_modes"}),
    # file_bytes reads a link through: "link" now shows run.sh's bytes.
    (_retarget, {"file_bytes", "entries", "entry_hashes", "entries_and_modes", "inodes"}),
    (_empty_dir, {"entries_and_modes", "inodes"}),
    (_recreate, {"inodes"}),
    # entry_hashes leaves .git out unless asked (the engine never captures it).
    (_git, {"file_bytes", "entries", "entries_and_modes"}),
]


@pytest.mark.parametrize(("change", "seen_by"), CHANGES, ids=[c.__name__.strip("_") for c, _ in CHANGES])
def test_each_oracle_sees_exactly_the_changes_it_promises(
    tmp_path: Path, change: Callable[[Path], None], seen_by: set[str]
) -> None:
    root = _sample(tmp_path / "ws")
    before = {name: oracle(root) for name, oracle in ORACLES.items()}
    change(root)
    changed = {name for name, oracle in ORACLES.items() if oracle(root) != before[name]}
    assert changed == seen_by


def test_entry_hashes_sees_git_when_asked(tmp_path: Path) -> None:
    root = _sample(tmp_path / "ws")
    before = entry_hashes(root, include_git=True)
    _git(root)
    assert entry_hashes(root, include_git=True) != before


def test_readings_are_relative_slash_paths(tmp_path: Path) -> None:
    root = _sample(tmp_path / "ws")
    assert set(file_bytes(root)) == {"src/a.py", "run.sh", "link", ".git/HEAD"}
    assert entries(root)["link"] == ("symlink", b"src/a.py", False)
    assert entries(root)["run.sh"] == ("file", b"#!/bin/sh\n", True)
    assert entries_and_modes(root)["src"] == ("dir", oct(os.stat(root / "src").st_mode & 0o7777))
