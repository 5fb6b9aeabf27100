"""``oscompat.writers_held_off``: the read lease that proves a read of a workspace file is one
version (capture's torn-read guard, ``engine/capture/scan.py``). Real files, real descriptors,
on whatever file system the test's temporary folder is on (ext4 and tmpfs both grant leases)."""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from retrace.oscompat import writers_held_off

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="read leases are Linux's")


def _file(tmp_path: Path) -> Path:
    p = tmp_path / "f.bin"
    p.write_bytes(b"\x01" * 8192)
    return p


@linux_only
@pytest.mark.parametrize(
    ("writer", "expected"),
    [
        ("none", "held"),
        ("open for writing", "refused"),
        ("open read-write", "refused"),
        ("writable mapping", "refused"),
    ],
)
def test_a_lease_is_held_only_while_nobody_can_be_writing(tmp_path: Path, writer: str, expected: str) -> None:
    p = _file(tmp_path)
    keep: list[int] = []
    view = None
    if writer == "open for writing":
        keep.append(os.open(p, os.O_WRONLY))
    elif writer == "open read-write":
        keep.append(os.open(p, os.O_RDWR))
    elif writer == "writable mapping":
        fd = os.open(p, os.O_RDWR)
        view = mmap.mmap(fd, 8192)
        os.close(fd)  # the mapping alone keeps the file open for writing
    fd = os.open(p, os.O_RDONLY)
    try:
        with writers_held_off(fd) as state:
            assert state == expected
        with writers_held_off(fd) as again:  # released on leaving: it can be taken again
            assert again == expected
    finally:
        os.close(fd)
        for k in keep:
            os.close(k)
        if view is not None:
            view.close()


@linux_only
def test_a_writer_that_opens_during_the_lease_waits_for_its_release(tmp_path: Path) -> None:
    p = _file(tmp_path)
    fd = os.open(p, os.O_RDONLY)
    opened_at: list[float] = []

    def writer() -> None:
        w = os.open(p, os.O_WRONLY)
        opened_at.append(time.monotonic())
        os.close(w)

    try:
        with writers_held_off(fd) as state:
            assert state == "held"
            t = threading.Thread(target=writer)
            t.start()
            time.sleep(0.2)
            assert opened_at == [], "a writer opened the file while the lease was held"
            released = time.monotonic()
        t.join(10)
        assert opened_at and opened_at[0] >= released
    finally:
        os.close(fd)


def test_elsewhere_nothing_is_promised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    fd = os.open(_file(tmp_path), os.O_RDONLY)
    try:
        with writers_held_off(fd) as state:
            assert state == "unknown"
    finally:
        os.close(fd)
