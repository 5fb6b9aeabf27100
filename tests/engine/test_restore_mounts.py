"""All or nothing whatever the mount layout (safety round 3, item 8): the same forced restores
and the same injected faults with the store on the workspace's file system and on another one
(a tmpfs mounted for the test). A forced restore that swaps a file and a directory applies;
any failure at any step rolls the workspace back byte- and inode-exactly, and no temporary or
trash entry is left in the workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig
from retrace.engine.restore import faults
from retrace.engine.workspace import is_temp_name

Open = Callable[..., Engine]
STEPS = ("write", "create", "replace", "delete", "chmod")
"""Fault steps that fail the apply (a failed ``prune`` only leaves an empty directory behind)."""


@pytest.fixture(params=["same-fs", "other-fs"])
def layout(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    if request.param == "same-fs":
        yield ws, tmp_path / "store"
        return
    mount = tmp_path / "other"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the store (needs root): {done.stderr.decode().strip()}")
    try:
        assert os.stat(mount).st_dev != os.stat(ws).st_dev
        yield ws, mount / "store"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def opener(layout: tuple[Path, Path]) -> Iterator[Open]:
    ws, store = layout
    opened: list[Engine] = []

    def factory() -> Engine:
        eng = Engine.open(ws, store, config=EngineConfig())
        opened.append(eng)
        return eng

    yield factory
    for e in opened:
        e.close()


def _leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if is_temp_name(p.name)]


def _inodes(root: Path) -> dict[str, int]:
    """Inodes of files and links (a directory a rollback recreates is a new one, by contract)."""
    return {str(p.relative_to(root)): p.lstat().st_ino for p in root.rglob("*") if not p.is_dir()}


def _swap_history(ws: Path, eng: Engine) -> str:
    """Checkpoint A: ``x`` a directory, ``y`` a file; then B: ``x`` a file, ``y`` a directory."""
    write(ws, "x/inner.txt", "inner\n")
    write(ws, "y", "plain y\n")
    write(ws, "keep/a.txt", "a1\n")
    write(ws, "tool.sh", "echo\n")
    eng.checkpoint("A")
    a = eng.head.id
    (ws / "x" / "inner.txt").unlink()
    (ws / "x").rmdir()
    write(ws, "x", "now a file\n")
    (ws / "y").unlink()
    write(ws, "y/deep/z.txt", "z\n")
    write(ws, "keep/a.txt", "a2\n")
    (ws / "tool.sh").chmod(0o755)
    write(ws, "gone/old.txt", "old\n")
    eng.checkpoint("B")
    return a


def test_forced_swap_of_a_file_and_a_directory_applies(layout: tuple[Path, Path], opener: Open) -> None:
    ws, _ = layout
    eng = opener()
    a = _swap_history(ws, eng)
    expected_b = entry_hashes(ws)
    # Someone else's change, so the restore must be forced.
    write(ws, "keep/a.txt", "edited by hand\n")
    out = eng.restore(a, force=True)
    assert out.kind == "applied", out
    assert (ws / "x").is_dir() and (ws / "x" / "inner.txt").read_text() == "inner\n"
    assert (ws / "y").is_file() and (ws / "y").read_text() == "plain y\n"
    assert not _leftovers(ws)
    assert entry_hashes(ws) != expected_b


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("nth", [1, 2])
def test_a_fault_at_any_step_rolls_back_exactly(
    layout: tuple[Path, Path], opener: Open, step: str, nth: int
) -> None:
    ws, _ = layout
    eng = opener()
    a = _swap_history(ws, eng)
    write(ws, "keep/a.txt", "edited by hand\n")
    before, inodes = entry_hashes(ws), _inodes(ws)
    seen: list[str] = []

    def hook(s: str, path: str) -> None:
        if s == step:
            seen.append(path)
            if len(seen) == nth:
                raise OSError(5, "injected fault", path)

    with faults.injected(hook):
        out = eng.restore(a, force=True)
    if len(seen) < nth:
        assert out.kind == "applied", out
        return
    assert out.kind == "failed", out
    assert out.rolled_back, out
    assert entry_hashes(ws) == before
    assert _inodes(ws) == inodes
    assert not _leftovers(ws)
    # The workspace is still restorable afterwards.
    out = eng.restore(a, force=True)
    assert out.kind == "applied", out
    assert not _leftovers(ws)


_KILLED_APPLY = """
import os, sys
from pathlib import Path
from retrace.engine import Engine, EngineConfig
from retrace.engine.restore import faults
ws, store = Path(sys.argv[1]), Path(sys.argv[2])
target, step, nth = sys.argv[3], sys.argv[4], int(sys.argv[5])
eng = Engine.open(ws, store, config=EngineConfig(watcher=False))
seen = []
def hook(s, path):
    if s == step:
        seen.append(path)
        if len(seen) == nth:
            os._exit(9)
with faults.injected(hook):
    eng.restore(target, force=True)
os._exit(0)
"""


@pytest.mark.parametrize("step", ["replace", "delete", "create"])
def test_a_restore_killed_mid_apply_is_rolled_back_by_the_next_open(
    layout: tuple[Path, Path], opener: Open, step: str
) -> None:
    """Killed between two renames (the process dies, nothing of it runs again): the next open
    puts every path back and leaves no temporary or trash entry in the workspace."""
    ws, store = layout
    eng = opener()
    a = _swap_history(ws, eng)
    eng.close()
    before = entry_hashes(ws)
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_APPLY, str(ws), str(store), a, step, "1"],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 9, done.stderr.decode()
    eng = opener()
    assert entry_hashes(ws) == before
    assert not _leftovers(ws)
    out = eng.restore(a, force=True)
    assert out.kind == "applied", out
