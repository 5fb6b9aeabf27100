"""Exclusive writer lock on a store, through ``portalocker`` (``flock`` on POSIX, ``msvcrt``
byte-range locks on Windows).

Contract: :meth:`StoreLock.acquire` never waits. It either holds the lock until
:meth:`StoreLock.release` (or the process's death: the OS drops the lock with the descriptor,
which is never inherited by child processes) or raises :class:`StoreLocked` naming the holder's
pid. The holder writes its pid into the lock file and into ``<lock>.pid`` beside it: on Windows
the locked range of the lock file cannot be read by another process, the side file can.

Every refusal appends one byte to ``<lock>.refused`` (best effort, an ``O_APPEND`` write needs no
lock): its size is the store's count of lock conflicts, read by :func:`refusals`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

import portalocker

from retrace.engine.errors import StoreLocked


class StoreLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.pid_path = path.with_name(path.name + ".pid")
        self.refused_path = refused_path(path)
        self._file: IO[bytes] | None = None

    def acquire(self) -> None:
        # "a+b": created when missing, never truncated before the lock is ours. Python opens it
        # non-inheritable, so a command the server runs cannot keep the store locked.
        f = self.path.open("a+b")
        try:
            portalocker.lock(f, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            f.close()
            self._count_refusal()
            holder = self._holder()
            raise StoreLocked(
                f"store is locked: in use by another Retrace process (pid {holder}): {self.path.parent}",
                int(holder) if holder.isdecimal() else None,
            ) from None
        except BaseException:
            f.close()
            raise
        mine = f"{os.getpid()}\n".encode()
        f.seek(0)
        f.truncate()
        f.write(mine)
        f.flush()
        with contextlib.suppress(OSError):  # only a better error message depends on it
            # Replaced whole, never truncated in place: a reader sees the old pid or the new one.
            tmp = self.pid_path.with_name(f"{self.pid_path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(mine)
            tmp.replace(self.pid_path)
        self._file = f

    def _count_refusal(self) -> None:
        with contextlib.suppress(OSError), self.refused_path.open("ab") as out:
            out.write(b"x")

    def _holder(self) -> str:
        for source in (self.path, self.pid_path):
            try:
                text = source.read_text(errors="replace").strip()
            except OSError:
                continue
            if text:
                return text
        return "unknown"

    def release(self) -> None:
        f, self._file = self._file, None
        if f is None:
            return
        try:
            portalocker.unlock(f)
        finally:
            f.close()


def refused_path(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".refused")


def refusals(lock_path: Path) -> int:
    """How many times a process was refused the store's lock (0 when never)."""
    try:
        return refused_path(lock_path).stat().st_size
    except OSError:
        return 0
