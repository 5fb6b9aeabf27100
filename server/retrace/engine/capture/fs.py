"""Low-level file-system access for capture: paths of any depth, bounded reads.

A path longer than PATH_MAX is still the user's work: :func:`at` resolves it one component at a
time through directory file descriptors (never following a symlink in a parent), so it can be
listed, stat'ed, read and watched like any other.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TypeVar

from retrace.oscompat import O_CLOEXEC, O_DIRECTORY

PATH_SAFE = 4000
"""Absolute paths this long (bytes) or longer are resolved relative to directory fds: the
kernel refuses paths longer than PATH_MAX (4096), and a deep tree is still the user's work."""
_DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_CLOEXEC
T = TypeVar("T")


def too_long(path: str) -> bool:
    return len(path) >= PATH_SAFE // 4 and len(os.fsencode(path)) >= PATH_SAFE


def open_dir(ws: str, rel: str) -> int:
    """An fd of directory ``ws/rel``, resolved one component at a time through directory fds
    (never following a symlink), so any depth can be opened."""
    fd = os.open(ws, _DIR_FLAGS)
    try:
        for part in rel.split("/"):
            if part:
                nfd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def at(ws: str, rel: str, fn: Callable[[str, int | None], T]) -> T:
    """``fn(path, dir_fd)`` for ``ws/rel``: the absolute path when the kernel accepts it, else
    the leaf name relative to an fd of its parent directory."""
    full = os.path.join(ws, rel) if rel else ws
    if not too_long(full):
        return fn(full, None)
    cut = rel.rfind("/")
    fd = open_dir(ws, rel[:cut] if cut > 0 else "")
    try:
        return fn(rel[cut + 1 :], fd)
    finally:
        os.close(fd)


def lstat_at(ws: str, rel: str) -> os.stat_result:
    return at(ws, rel, lambda p, d: os.stat(p, dir_fd=d, follow_symlinks=False))


def is_real_dir(ws: str, rel: str) -> bool:
    """Whether ``ws/rel`` is a directory (not a symlink to one), at any depth."""
    try:
        return stat.S_ISDIR(lstat_at(ws, rel).st_mode)
    except OSError:
        return False


def read_fd(fd: int, first: int, limit: int) -> bytes:
    """Read to EOF (at most ``limit`` bytes) and close ``fd``; one syscall for most files."""
    try:
        data = os.read(fd, first)
        if len(data) < first:
            return data
        parts = [data]
        total = len(data)
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)
