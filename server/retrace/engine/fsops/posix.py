"""The ``posix`` backend: descriptor-relative system calls (``openat`` family). A :class:`Dir`
holds an open directory descriptor; every name is resolved by the kernel inside it, so the
contract of :mod:`retrace.engine.fsops` holds atomically (no check-then-use window).
``renameat2`` (Linux) gives the atomic no-replace rename and exchange; elsewhere the no-replace
rename is a checked plain rename and exchange is unsupported."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import stat
from collections.abc import Callable

from retrace import oscompat
from retrace.engine.fsops.base import Dir
from retrace.oscompat import O_BINARY, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK

DIR_FLAGS = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
_READ = os.O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


@functools.cache
def renameat2_call() -> Callable[..., int] | None:
    """libc's ``renameat2``, looked up on first use (:func:`retrace.oscompat.libc`); ``None``
    where it is missing."""
    libc = oscompat.libc()  # a Linux system call; elsewhere the checked fallback
    if libc is None:
        return None
    try:
        fn = libc.renameat2
    except AttributeError:  # a C library older than the call (glibc < 2.28)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _rename2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> bool:
    """``renameat2``; ``False`` when the kernel/filesystem does not support ``flags``."""
    call = renameat2_call()
    if call is None:
        return False
    rc = call(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), src, None, dst)


def _dir(fd: int, path: str) -> Dir:
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    return Dir(path, fd, (st.st_dev, st.st_ino))


class PosixBackend:
    name = "posix"

    def open_root(self, path: str) -> Dir:
        return _dir(os.open(path, DIR_FLAGS), path)

    def open_dir(self, parent: Dir, name: str) -> Dir:
        return _dir(os.open(name, DIR_FLAGS, dir_fd=parent.fd), os.path.join(parent.path, name))  # noqa: PTH118

    def close(self, d: Dir) -> None:
        if d.fd >= 0:
            os.close(d.fd)
            d.fd = -1

    def dir_stat(self, d: Dir) -> os.stat_result:
        return os.fstat(d.fd)

    def lstat(self, d: Dir, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=d.fd, follow_symlinks=False)

    def readlink(self, d: Dir, name: str) -> str:
        return os.readlink(name, dir_fd=d.fd)

    def open_file(self, d: Dir, name: str) -> int:
        return os.open(name, _READ, dir_fd=d.fd)

    def create_file(self, d: Dir, name: str, mode: int) -> int:
        return os.open(name, _CREATE, mode, dir_fd=d.fd)

    def symlink(self, target: str, d: Dir, name: str) -> None:
        os.symlink(target, name, dir_fd=d.fd)

    def mkdir(self, d: Dir, name: str, mode: int) -> None:
        os.mkdir(name, mode, dir_fd=d.fd)

    def rmdir(self, d: Dir, name: str) -> None:
        os.rmdir(name, dir_fd=d.fd)

    def unlink(self, d: Dir, name: str) -> None:
        os.unlink(name, dir_fd=d.fd)

    def remove_tree(self, d: Dir, name: str) -> None:
        if stat.S_ISDIR(self.lstat(d, name).st_mode):
            shutil.rmtree(name, dir_fd=d.fd)
        else:
            os.unlink(name, dir_fd=d.fd)

    def listdir(self, d: Dir) -> list[str]:
        return os.listdir(d.fd)  # noqa: PTH208 - a directory descriptor, not a path

    def rename(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        os.rename(src_name, dst_name, src_dir_fd=src.fd, dst_dir_fd=dst.fd)

    def rename_noreplace(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        if _rename2(src.fd, src_name, dst.fd, dst_name, _RENAME_NOREPLACE):
            return
        try:
            os.stat(dst_name, dir_fd=dst.fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(src_name, dst_name, src_dir_fd=src.fd, dst_dir_fd=dst.fd)
            return
        raise FileExistsError(errno.EEXIST, "destination exists", dst_name)

    def exchange(self, a: Dir, a_name: str, b: Dir, b_name: str) -> bool:
        return _rename2(a.fd, a_name, b.fd, b_name, _RENAME_EXCHANGE)

    def fchmod(self, fd: int, d: Dir, name: str, mode: int) -> None:
        os.fchmod(fd, mode)

    def fsync_dir(self, d: Dir) -> None:
        os.fsync(d.fd)


POSIX = PosixBackend()
