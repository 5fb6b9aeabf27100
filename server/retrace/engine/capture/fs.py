"""Low-level file-system access for capture: paths of any depth, bounded reads, opens that
never block.

A path longer than PATH_MAX is still the user's work: :func:`at` resolves it one component at a
time through directory file descriptors (never following a symlink in a parent), so it can be
listed, stat'ed, read and watched like any other.

:func:`open_regular` is THE way a workspace file is opened for reading (capture, ignore files,
diffs of the disk, instruction files): the path can turn into a FIFO, a socket or a device
between the ``lstat`` that chose it and the open, and a blocking open of a FIFO with no writer
never returns (a capture would hold the store lock forever). So the open never blocks, never
follows a final symlink, never makes a terminal the controlling one, and the type is checked
on the descriptor itself.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from typing import TypeVar

from retrace.engine.capture.faults import fire
from retrace.engine.fsops import Backend, Dir
from retrace.oscompat import (
    O_BINARY,
    O_CLOEXEC,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_NONBLOCK,
    has_dir_fd,
    is_link_like,
)

PATH_SAFE = 4000
"""Absolute paths this long (bytes) or longer are resolved relative to directory fds: the
kernel refuses paths longer than PATH_MAX (4096), and a deep tree is still the user's work."""
_DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_CLOEXEC
READ_FLAGS = os.O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
"""Flags of every read of a workspace file: see :func:`open_regular`. (``O_NONBLOCK`` changes
nothing for a regular file's reads.)"""
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
                nfd = os.open(part, _DIR_FLAGS | O_NOFOLLOW, dir_fd=fd)
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
    if not too_long(full) or not has_dir_fd():  # Windows: no dir_fd; its own long-path rules
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


class NotRegularFileError(OSError):
    """The path holds something other than a regular file (a FIFO, a socket, a device, a
    directory, a symlink): nothing was read."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message (``"a FIFO"``)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    ):
        if test(mode):
            return name
    return "a special file"


_NOT_REGULAR_ERRNOS = frozenset({errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP})
"""What ``open`` answers for a final symlink (``O_NOFOLLOW``), a socket, a directory opened for
writing, a device without a driver, a special file that refuses opens: not a regular file."""


def open_regular(path: str, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """An fd of the regular file ``path`` (relative to ``dir_fd`` when given) and its fstat.
    Never blocks (``O_NONBLOCK``), never follows a final symlink; anything that is not a
    regular file raises :class:`NotRegularFileError` (closed already). ``FileNotFoundError`` and
    other ``OSError`` as ``os.open`` raises them."""
    fire("open", path)
    fd, st = _regular(lambda: os.open(path, READ_FLAGS, dir_fd=dir_fd), path)
    if not O_NOFOLLOW:  # Windows: the open followed a final link; the path must hold what was read
        try:
            now = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            now = None
        if now is None or is_link_like(now) or not os.path.samestat(now, st):
            os.close(fd)
            raise NotRegularFileError(errno.ELOOP, "not a regular file (a link or reparse point)", path)
    return fd, st


def open_regular_in(fs: Backend, d: Dir, name: str) -> tuple[int, os.stat_result]:
    """:func:`open_regular` of the entry ``name`` of the directory ``d`` through the file-system
    backend ``fs`` (a :class:`~retrace.engine.workspace.DirTree`'s)."""
    fire("open", name)
    return _regular(lambda: fs.open_file(d, name), name)


def _regular(opener: Callable[[], int], path: str) -> tuple[int, os.stat_result]:
    try:
        fd = opener()
    except OSError as exc:
        if exc.errno in _NOT_REGULAR_ERRNOS:
            raise NotRegularFileError(exc.errno, f"not a regular file ({exc.strerror})", path) from None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFileError(errno.EINVAL, f"not a regular file ({kind_of(st.st_mode)})", path)
    return fd, st


def read_regular(path: str, limit: int | None = None, dir_fd: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``; all of them by default),
    opened by :func:`open_regular` (so never blocking); its errors as it raises them: every
    ``OSError``, :class:`NotRegularFileError` included, means "no regular file to read here"."""
    fd, st = open_regular(path, dir_fd)
    cap = sys.maxsize if limit is None else limit
    return read_fd(fd, min(st.st_size + 1, cap), cap)


def read_open(fd: int, first: int, limit: int) -> bytes:
    """Read ``fd`` to EOF (at most ``limit`` bytes); one syscall for most files."""
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


def read_fd(fd: int, first: int, limit: int) -> bytes:
    """:func:`read_open`, then close ``fd``."""
    try:
        return read_open(fd, first, limit)
    finally:
        os.close(fd)
