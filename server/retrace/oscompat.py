"""What differs between the platforms the server runs on (Linux, macOS, Windows), in one place.

Contract: importing this module never fails on any of them. Open flags that a platform lacks are
``0`` here (``O_CLOEXEC``: Windows handles are not inherited by default; ``O_NOFOLLOW``,
``O_DIRECTORY``: only POSIX has them, and code that needs their guarantee goes through the
file-system backend :mod:`retrace.engine.fsops`, which :func:`has_dir_fd` chooses).
Predicates are functions, read at call time, so tests can simulate another platform by
monkeypatching ``sys.platform`` / ``os.supports_dir_fd``.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import ctypes

O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)
"""Windows only: without it ``os.open`` gives a TEXT-mode descriptor whose reads and writes
translate line endings. Every ``os.open`` of file content carries it."""


def pread(fd: int, n: int, offset: int) -> bytes:
    """``os.pread`` where it exists; elsewhere (Windows) a seek and a read (callers read one
    descriptor from one thread)."""
    if hasattr(os, "pread"):
        return os.pread(fd, n, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, n)


def fdatasync(fd: int) -> None:
    """``os.fdatasync`` where it exists, else ``os.fsync`` (macOS, Windows)."""
    (getattr(os, "fdatasync", None) or os.fsync)(fd)


def fsync_dir(path: str) -> None:
    """Make a directory's new entries durable (POSIX); Windows cannot open a directory with
    ``os.open`` and its file system journals directory entries itself: nothing to do there."""
    if os.name == "nt" or is_windows():
        return
    fd = os.open(path, os.O_RDONLY | O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


WritersState = Literal["held", "refused", "unknown"]
"""What :func:`writers_held_off` found: ``held`` (no descriptor open for writing, none can open
until released), ``refused`` (some process has the file open for writing: a write may be in
progress), ``unknown`` (the platform, the file system or the file's owner allows no lease)."""


@contextmanager
def writers_held_off(fd: int) -> Iterator[WritersState]:
    """Keep writers of the read-only descriptor ``fd``'s file out while the block runs (Linux: a
    read lease, ``fcntl(F_SETLEASE, F_RDLCK)``). The kernel grants it only while no descriptor
    — a writable shared mapping's included — has the file open for writing, and makes any open
    for writing (a truncate by path too) wait until it is released: bytes read under ``held``
    are one version. A write still copying its bytes is always open, so it shows as
    ``refused``, whatever its timestamps say. The lease is released on leaving; a writer waits
    at most the block's time (the kernel would take the lease back after
    ``/proc/sys/fs/lease-break-time``, 45 s by default: far beyond a capped read). A breaking
    lease signals SIGURG, ignored by default (SIGIO, the kernel's default, would end the
    process). The block must not open the file for writing itself: that open would wait."""
    if sys.platform != "linux":
        yield "unknown"
        return
    import fcntl  # POSIX only

    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        yield "refused" if exc.errno in (errno.EAGAIN, errno.EBUSY) else "unknown"
        return
    try:
        yield "held"
    finally:
        with suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


FILE_ATTRIBUTE_REPARSE_POINT = 0x400
"""Windows: the entry is a reparse point (a symlink, a junction, a mount point, a cloud or
deduplication placeholder): never a directory Retrace may enter."""


def is_link_like(st: os.stat_result) -> bool:
    """Whether the ``lstat`` result ``st`` is a symlink or, on Windows, any reparse point
    (``st_file_attributes``: a junction is not ``S_ISLNK`` there)."""
    attributes = getattr(st, "st_file_attributes", 0)
    return stat.S_ISLNK(st.st_mode) or bool(attributes & FILE_ATTRIBUTE_REPARSE_POINT)


def is_windows() -> bool:
    return sys.platform == "win32"


def ignores_case() -> bool:
    """Whether the platform's default file system treats names that differ only in letter case
    as one file (Windows NTFS, macOS APFS/HFS+ as formatted by default)."""
    return sys.platform in ("win32", "darwin")


def ignores_normalization() -> bool:
    """Whether the platform's default file system finds a name whichever Unicode normalization it
    is written in (macOS: APFS and HFS+ see ``café`` with a composed or a decomposed ``é`` as one
    name; NTFS and Linux file systems compare the code points)."""
    return sys.platform == "darwin"


def has_dir_fd() -> bool:
    """Whether ``os.open``/``os.stat`` accept ``dir_fd`` (POSIX ``openat``): where they do, the
    checkpoint engine resolves every workspace path through directory descriptors (the
    ``posix`` file-system backend, atomic); where not (Windows), through checked paths (the
    ``portable`` backend, :mod:`retrace.engine.fsops`)."""
    return os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def dir_fd_missing(what: str) -> str | None:
    """Why ``what`` cannot run here (one line naming the platform), ``None`` when
    :func:`has_dir_fd`: callers refuse explicitly instead of failing inside a file operation."""
    if has_dir_fd():
        return None
    return (
        f"{what} needs descriptor-relative file operations (openat), which this platform "
        f"({sys.platform}) does not provide; leave RETRACE_FS_BACKEND unset to use the portable backend"
    )


def libc() -> ctypes.CDLL | None:
    """The C library this process already runs on (Linux; ``None`` elsewhere, the platform read
    at call time like the predicates above), for the system calls Python has no wrapper for
    (``renameat2``, inotify, ``prctl``). Opened as the process's own symbol table
    (``dlopen(NULL)``), not looked up by name: ``ctypes.util.find_library`` starts ``ldconfig -p``
    (a subprocess: a fork of the whole server, ~10 ms) every time it is called, and the watcher
    called it once per workspace watch. Callers set the ``argtypes`` of the functions they use
    (each function object is shared) and read ``ctypes.get_errno()``."""
    if not sys.platform.startswith("linux"):
        return None
    return _own_symbols()


@functools.cache
def _own_symbols() -> ctypes.CDLL | None:
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
