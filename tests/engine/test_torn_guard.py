"""The torn-read guard of ``scan.read_entry`` where the file's identity cannot see the writer.

A write stamps mtime/ctime when it STARTS, and on a coarse clock a second write in the same tick
leaves them unchanged: a file rewritten in place while it is read can keep its whole stat
identity (device, inode, size, mtime, ctime, mode) from before the read to after it. Here the
identity is frozen on purpose (``os.fstat`` answers the pre-write stat while the writer is at
work), the writer works through the capture fault seam (half of the file before the first read,
the other half before the verifying read), and the stored content must still be ONE version.
Files whose change is old enough cost one read (no verification), which is the guard's speed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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

    def hook(step: str, path: str) -> None:
        if not path.endswith(target.name):
            return
        steps.append(step)
        if step == "read" and steps.count("read") == 1:
            frozen.append(os.lstat(target))  # what the open identified: kept through the write
            _pwrite(target, start + 1, 0, SIZE // 2)
        elif step == "verify" and steps.count("verify") == 1:
            _pwrite(target, start + 1, SIZE // 2, SIZE)  # the writer finishes
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
    assert steps.count("verify") >= 2, steps  # the first attempt was verified and rejected


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


def test_a_settled_file_is_read_once_and_a_fresh_one_is_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard's cost: a second read only for a file changed within ``SETTLE_NS``."""
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
