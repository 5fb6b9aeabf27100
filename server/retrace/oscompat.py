"""What differs between the platforms the server runs on (Linux, macOS, Windows), in one place.

Contract: importing this module never fails on any of them. Open flags that a platform lacks are
``0`` here (``O_CLOEXEC``: Windows handles are not inherited by default; ``O_NOFOLLOW``,
``O_DIRECTORY``: only POSIX has them, and code that needs their guarantee goes through the
file-system backend :mod:`retrace.engine.fsops`, which :func:`has_dir_fd` chooses).
Predicates are functions, read at call time, so tests can simulate another platform by
monkeypatching ``sys.platform`` / ``os.supports_dir_fd``.
"""

from __future__ import annotations

import os
import stat
import sys

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
