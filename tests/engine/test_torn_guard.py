"""The torn-read guard of ``scan.read_entry`` where the file's identity cannot see the writer.

A write stamps mtime/ctime when it STARTS, and on a coarse clock a second write in the same tick
leaves them unchanged: a file rewritten in place while it is read can keep its whole stat
identity (device, inode, size, mtime, ctime, mode) from before the read to after it. Here the
identity is frozen on purpose (``os.fstat`` answers the pre-write stat while the writer is at
work), the writer works through the capture fault seam (half of the file before the first read,
the other half before the verifying read, its descriptor open in between as a real writer's is),
and the stored content must still be ONE version. A file nobody holds open for writing costs one
read (a read lease proves it), as does, where no lease can be had, a file whose change is old
enough: the guard's speed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrace.engine import Engine, EngineConfig
from retrace.engine.capture import faults, scan

SIZE = 48 * 1024


def _pwrite(path: Path, byte: int, start: int, end: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, bytes([byte]) * (end - start), start)
    finally:
        os.close(fd)


def _frozen_writer(
    target: Path, monkeypatch: pytest.MonkeyPatch, start: int
) -> tuple[Callable[[str, str], None], list[str]]:
    """A hook rewriting ``target`` in place with ``start + 1`` bytes across the first read and
    its verification, while ``os.fstat`` of ``target`` keeps answering the pre-write identity."""
    frozen: list[os.stat_result] = []
    steps: list[str] = []
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if frozen and (st.st_ino, st.st_dev) == (frozen[0].st_ino, frozen[0].st_dev):
            return frozen[0]
        return st

    monkeypatch.setattr(os, "fstat", fstat)

    writing: list[int] = []

    def hook(step: str, path: str) -> None:
        if not path.endswith(target.name):
            return
        steps.append(step)
        if step == "read" and steps.count("read") == 1:
            frozen.append(os.lstat(target))  # what the open identified: kept through the write
            # A write in progress holds its descriptor open (no read lease can be had) until done.
            writing.append(os.open(target, os.O_WRONLY))
            os.pwrite(writing[0], bytes([start + 1]) * (SIZE // 2), 0)
        elif step == "verify" and steps.count("verify") == 1:
            os.pwrite(writing[0], bytes([start + 1]) * (SIZE - SIZE // 2), SIZE // 2)  # it finishes
            os.close(writing.pop())
            frozen.clear()

    return hook, steps


def test_read_entry_never_returns_a_mix_when_the_identity_cannot_tell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(bytes([1]) * SIZE)
    monkeypatch.setattr(scan, "SETTLE_NS", 3600 * 10**9)  # every file counts as just written
    hook, steps = _frozen_writer(target, monkeypatch, 1)
    with faults.injected(hook):
        r = scan.read_entry(str(target), os.lstat(target), 1 << 30)
    assert r is not None and r.unsure is None and r.data is not None
    assert len(set(r.data)) == 1, f"a mix of two versions was read: {sorted(set(r.data))}"
    assert r.data == bytes([2]) * SIZE
    # The first attempt was verified and rejected; the retry found the writer gone.
    assert steps.count("verify") >= 1 and steps.count("read") >= 2, steps


@pytest.mark.parametrize("announced", [True, False], ids=["edit", "detect"])
def test_a_capture_stores_one_version_when_the_identity_cannot_tell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, announced: bool
) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    target = ws / "data.bin"
    target.write_bytes(bytes([1]) * SIZE)
    monkeypatch.setattr(scan, "SETTLE_NS", 3600 * 10**9)
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        target.write_bytes(bytes([5]) * SIZE)  # changed since the baseline: it must be read
        hook, _steps = _frozen_writer(target, monkeypatch, 5)
        with faults.injected(hook):
            cp = eng.checkpoint("rewrite", changed_paths=["data.bin"] if announced else None)
        monkeypatch.undo()
        data = eng.content(eng.entries_at(cp.id, ["data.bin"])["data.bin"])
    assert data is not None and len(set(data)) == 1, "a mix of two versions was stored"
    assert data == bytes([6]) * SIZE
    assert cp.recoverability == "full", cp.unrecoverable


@contextmanager
def _no_lease(_fd: int) -> Iterator[str]:
    yield "unknown"


def test_a_file_nobody_is_writing_is_read_once_however_fresh(tmp_path: Path) -> None:
    """With a read lease (Linux, the file's owner) no writer can be at work: one read."""
    target = tmp_path / "f.txt"
    target.write_bytes(b"one version\n" * 100)
    steps: list[str] = []
    with faults.injected(lambda step, _path: steps.append(step)):
        fresh = scan.read_entry(str(target), os.lstat(target), 1 << 30)
    assert fresh is not None and fresh.data == target.read_bytes()
    assert steps == ["open", "read"], steps


def test_without_a_lease_a_settled_file_is_read_once_and_a_fresh_one_is_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard's cost where no lease can be had (another platform, another owner's file): a
    second read only for a file changed within ``SETTLE_NS``."""
    monkeypatch.setattr(scan, "writers_held_off", _no_lease)
    target = tmp_path / "f.txt"
    target.write_bytes(b"one version\n" * 100)
    steps: list[str] = []
    st = os.lstat(target)
    settled_at = st.st_ctime_ns + scan.SETTLE_NS + 1
    monkeypatch.setattr(scan.time, "time_ns", lambda: settled_at)
    with faults.injected(lambda step, _path: steps.append(step)):
        settled = scan.read_entry(str(target), st, 1 << 30)
    assert settled is not None and settled.data == target.read_bytes()
    assert steps == ["open", "read"], steps
    steps.clear()
    monkeypatch.setattr(scan.time, "time_ns", lambda: st.st_ctime_ns + scan.SETTLE_NS - 1)
    with faults.injected(lambda step, _path: steps.append(step)):
        fresh = scan.read_entry(str(target), st, 1 << 30)
    assert fresh is not None and fresh.data == settled.data
    assert steps == ["open", "read", "verify"], steps
