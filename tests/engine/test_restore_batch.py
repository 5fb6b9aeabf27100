"""The disk restore's batched writes: new content is fetched (read, decompressed, verified) and
written by a few threads at once. A damaged blob or a failing write anywhere in the batch rolls
the whole restore back exactly (same inodes, no temporary file left), and a clean batch is
byte-exact, modes included, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes, inodes
from tests.safety.store_damage import BLOB_DAMAGE, damage_blob, sha

from retrace.engine import Engine
from retrace.engine.restore import faults
from retrace.engine.restore.disk import PARALLEL_WRITES_FROM
from retrace.engine.workspace import TEMP_PREFIX

Open = Callable[..., Engine]
N = PARALLEL_WRITES_FROM * 3


def _content(i: int, version: int) -> bytes:
    return b"".join(b"file %d line %d version %d\n" % (i, n, version) for n in range(50))


def _paths() -> list[str]:
    return [f"d{i % 5}/f{i:03d}.py" for i in range(N)]


def _history(ws: Path, eng: Engine) -> str:
    """The baseline (version 1 of every file), then one checkpoint rewriting them all."""
    base = eng.head.id
    for i, rel in enumerate(_paths()):
        write(ws, rel, _content(i, 2))
    eng.checkpoint("rewrite all", _paths())
    return base


def _temps(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(f"{TEMP_PREFIX}*")]


@pytest.fixture
def populated(ws: Path, open_engine: Open) -> Iterator[tuple[Engine, str]]:
    for i, rel in enumerate(_paths()):
        write(ws, rel, _content(i, 1), executable=i % 7 == 0)
    eng = open_engine()
    yield eng, _history(ws, eng)


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_damaged_blob_in_a_batch_changes_nothing(
    ws: Path, store: Path, open_engine: Open, populated: tuple[Engine, str], how: str
) -> None:
    eng, base = populated
    eng.close()
    victim = _paths()[N // 2]
    damage_blob(store, sha(_content(N // 2, 1)), how)
    eng = open_engine()  # nothing of the store in memory: every byte comes from disk
    before, inodes_before = entry_hashes(ws), inodes(ws)
    out = eng.restore(base)
    assert out.kind == "failed" and out.rolled_back, out
    assert base in out.error
    # (Cutting a pack loses every blob after the victim's too: any of them may be named first.)
    assert victim in out.error if how in ("flip", "substitute") else any(p in out.error for p in _paths())
    assert entry_hashes(ws) == before and inodes(ws) == inodes_before
    assert not _temps(ws)
    assert eng.head.kind != "restore"


def test_failing_write_mid_batch_rolls_back_exactly(ws: Path, populated: tuple[Engine, str]) -> None:
    eng, base = populated
    seen: list[str] = []

    def hook(step: str, rel: str) -> None:
        if step == "write":
            seen.append(rel)
            if len(seen) == N // 2:
                raise OSError(28, "injected: no space left", rel)

    before, inodes_before = entry_hashes(ws), inodes(ws)
    with faults.injected(hook):
        out = eng.restore(base)
    assert out.kind == "failed" and out.rolled_back, out
    assert entry_hashes(ws) == before and inodes(ws) == inodes_before
    assert not _temps(ws)
    assert eng.head.kind != "restore"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000])
def test_batch_restores_bytes_and_modes_under_any_umask(
    ws: Path, populated: tuple[Engine, str], umask: int
) -> None:
    eng, base = populated
    for rel in _paths()[::3]:
        (ws / rel).unlink()  # recreated by the restore: mode from scratch
    eng.checkpoint("delete a third", _paths()[::3])
    old = os.umask(umask)
    try:
        out = eng.restore(base)
    finally:
        os.umask(old)
    assert out.kind == "applied", out
    for i, rel in enumerate(_paths()):
        assert (ws / rel).read_bytes() == _content(i, 1)
        mode = stat.S_IMODE((ws / rel).stat().st_mode)
        assert bool(mode & 0o100) == (i % 7 == 0), (rel, oct(mode))
        assert mode & 0o644 == 0o644, (rel, oct(mode))  # readable as before, whatever the umask
    assert not _temps(ws)
