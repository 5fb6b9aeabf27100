"""Exclusive writer lock on a store (``fcntl.flock``); the lock file holds the holder's pid."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from retrace.engine.errors import StoreLocked


class StoreLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(
                f"store is locked by another Retrace process (pid {holder}): {self.path.parent}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
