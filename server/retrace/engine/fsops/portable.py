"""The ``portable`` backend: paths only, on what Windows and macOS also offer (no ``dir_fd``).

A :class:`Dir` is a directory's absolute path and the (device, inode) ``lstat`` gave it when it
was opened; opening one refuses a component that is a symlink or, on Windows, any reparse point
(junctions, mount points, cloud placeholders: ``st_file_attributes &
FILE_ATTRIBUTE_REPARSE_POINT``) with ``ELOOP``. Every operation then runs bracketed:

1. before: ``lstat(dir)`` must still be a real directory with the same identity;
2. the path-based call (``os.open``, ``os.replace``, ``os.rename``, ``os.mkdir``, ...);
3. after: the directory's identity again, and the entry the call produced is the one expected
   (``os.path.samestat`` of the opened descriptor's ``fstat`` and the path's ``lstat``; a renamed
   entry's identity at its new name).

Only a swap of a directory for a link *within* step 2 goes unseen before the call acts (Windows
resolves a path again on every call and offers no ``openat``; Python offers no
``FILE_FLAG_OPEN_REPARSE_POINT`` handle-relative calls). Such a swap is detected in step 3
(``OSError(ESTALE)``: the disk transaction above then rolls the whole restore back), and undone
where it can be:

* create (``O_EXCL``), symlink, mkdir: the new entry, found again through the same path and
  proved to be ours by its identity, is removed; nothing is ever written into a file before its
  check passed, so at worst an EMPTY file with a random ``.rt-`` name is left where the swapped
  link led when the swap was reverted meanwhile;
* rename: what the call moved (whatever stands at the destination now and did not before) is
  moved back where it came from, when nothing took its place there. The disk transaction renames into
  an existing name only through :meth:`exchange`, which this backend does not offer: what a
  restore replaces is first moved to its trash, then the new entry is renamed in without
  replacing (on Windows ``os.rename`` refuses an existing destination atomically; elsewhere a
  checked rename);
* an open for reading: the descriptor is closed and nothing read from it is used;
* rmdir: the (empty) directory is made again; unlink and remove-tree: NOT undoable — the
  transaction removes only its own temporary files (random names) and its own trash (entries it
  moved there); ``shutil.rmtree`` refuses a link or junction at the top and never follows one
  inside, but on Windows it walks by path, so a swap within its walk is not seen;
* rename WITH replace (only an agent's settings file, ``app/hooks/settings_file.py``): what it
  replaced where the swapped link led cannot be brought back.

A swap and a swap back both within one call (A→B→A) is not seen at all. Closing the window for
real on Windows needs handle-relative calls: each directory held open by ``CreateFileW`` with
``FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT`` and without ``FILE_SHARE_DELETE``
(then nobody can rename or replace it while the handle is held) and ``NtCreateFile`` relative
to it; the standard library has neither, and it could not be tested here.

Reads are also safe without the bracket: capture compares the identity of what it read with the
``lstat`` that chose the path.
"""

# The portable backend IS path-based os calls: that is its point.
# ruff: noqa: PTH101, PTH102, PTH104, PTH106, PTH108, PTH115, PTH211

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable
from typing import TypeVar

from retrace.engine.fsops.base import Dir
from retrace.oscompat import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, is_link_like

_READ = os.O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_BINARY | getattr(os, "O_NOCTTY", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
T = TypeVar("T")


ESTALE = getattr(errno, "ESTALE", errno.EIO)
"""The error of an identity that moved under an operation."""


def _stale(path: str) -> OSError:
    return OSError(ESTALE, "a directory was moved or replaced while in use", path)


def _ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _real_dir(path: str) -> os.stat_result:
    """``lstat(path)`` of a real directory: a link or reparse point is ``ELOOP``."""
    st = os.lstat(path)
    if is_link_like(st):
        raise OSError(errno.ELOOP, "a link or reparse point, not a directory", path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
    return st


def check(d: Dir) -> None:
    """``d`` is still the directory it was opened on (else ``OSError(ESTALE)``)."""
    try:
        st = _real_dir(d.path)
    except OSError:
        raise _stale(d.path) from None
    if _ident(st) != d.ident:
        raise _stale(d.path)


def _join(d: Dir, name: str) -> str:
    return os.path.join(d.path, name)  # noqa: PTH118 - hot path, plain strings


def bracketed(d: Dir, call: Callable[[], T], undo: Callable[[], object] | None = None) -> T:
    """``call()`` with ``d`` checked before and after; ``undo()`` (best effort) when the check
    after it fails."""
    check(d)
    result = call()
    try:
        check(d)
    except OSError:
        if undo is not None:
            with contextlib.suppress(OSError):
                undo()
        raise
    return result


class PortableBackend:
    name = "portable"

    def open_root(self, path: str) -> Dir:
        return Dir(path, -1, _ident(_real_dir(path)))

    def open_dir(self, parent: Dir, name: str) -> Dir:
        path = _join(parent, name)
        return Dir(path, -1, _ident(bracketed(parent, lambda: _real_dir(path))))

    def close(self, d: Dir) -> None:
        return None

    def dir_stat(self, d: Dir) -> os.stat_result:
        return bracketed(d, lambda: os.lstat(d.path))

    def lstat(self, d: Dir, name: str) -> os.stat_result:
        return bracketed(d, lambda: os.lstat(_join(d, name)))

    def readlink(self, d: Dir, name: str) -> str:
        return bracketed(d, lambda: os.readlink(_join(d, name)))

    def open_file(self, d: Dir, name: str) -> int:
        path = _join(d, name)
        check(d)
        before = os.lstat(path)
        if is_link_like(before):
            raise OSError(errno.ELOOP, "a link or reparse point", path)
        fd = os.open(path, _READ)  # Windows: no O_NOFOLLOW; a link swapped in is caught below
        try:
            if not os.path.samestat(before, os.fstat(fd)):
                raise OSError(ESTALE, "replaced while it was opened", path)
            check(d)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def create_file(self, d: Dir, name: str, mode: int) -> int:
        path = _join(d, name)
        check(d)
        fd = os.open(path, _CREATE, mode)
        try:
            mine = os.fstat(fd)
            check(d)
            if not os.path.samestat(mine, os.lstat(path)):
                raise OSError(ESTALE, "created somewhere else", path)
        except BaseException:
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(fd), os.lstat(path)):
                    os.unlink(path)  # ours, wherever the path led: removed, nothing written
            os.close(fd)
            raise
        return fd

    def symlink(self, target: str, d: Dir, name: str) -> None:
        path = _join(d, name)

        def undo() -> None:
            if stat.S_ISLNK(os.lstat(path).st_mode) and os.readlink(path) == target:
                os.unlink(path)

        bracketed(d, lambda: os.symlink(target, path), undo)

    def mkdir(self, d: Dir, name: str, mode: int) -> None:
        path = _join(d, name)
        bracketed(d, lambda: os.mkdir(path, mode), lambda: os.rmdir(path))

    def rmdir(self, d: Dir, name: str) -> None:
        path = _join(d, name)
        bracketed(d, lambda: os.rmdir(path), lambda: os.mkdir(path, 0o755))

    def unlink(self, d: Dir, name: str) -> None:
        path = _join(d, name)
        bracketed(d, lambda: os.unlink(path))

    def remove_tree(self, d: Dir, name: str) -> None:
        path = _join(d, name)
        st = self.lstat(d, name)
        if stat.S_ISDIR(st.st_mode) and not is_link_like(st):
            # shutil.rmtree never follows a link inside the tree (on Windows, no junction
            # either) and refuses to start at a link.
            bracketed(d, lambda: shutil.rmtree(path))
        else:
            self.unlink(d, name)

    def listdir(self, d: Dir) -> list[str]:
        return bracketed(d, lambda: os.listdir(d.path))  # noqa: PTH208

    def _move(
        self, src: Dir, src_name: str, dst: Dir, dst_name: str, call: Callable[[str, str], None]
    ) -> None:
        sp, dp = _join(src, src_name), _join(dst, dst_name)
        dirs = (src,) if src is dst else (src, dst)
        for d in dirs:
            check(d)
        moving = os.lstat(sp)
        there = _lstat_or_none(dp)
        call(sp, dp)
        try:
            for d in dirs:
                check(d)
            if not os.path.samestat(moving, os.lstat(dp)):
                raise OSError(ESTALE, "moved somewhere else", dp)
        except OSError:
            with contextlib.suppress(OSError):
                # Whatever stands at ``dp`` now and did not before is what the call moved there
                # (from wherever ``sp`` led): it goes back, without replacing anything.
                now = os.lstat(dp)
                if (there is None or not os.path.samestat(there, now)) and not os.path.lexists(sp):
                    os.rename(dp, sp)
            raise

    def rename(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        self._move(src, src_name, dst, dst_name, os.replace)

    def rename_noreplace(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        self._move(src, src_name, dst, dst_name, _rename_noreplace)

    def exchange(self, a: Dir, a_name: str, b: Dir, b_name: str) -> bool:
        return False

    def fchmod(self, fd: int, d: Dir, name: str, mode: int) -> None:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
            return
        path = _join(d, name)
        if not os.path.samestat(os.fstat(fd), self.lstat(d, name)):
            raise OSError(ESTALE, "replaced while its mode was set", path)
        bracketed(d, lambda: os.chmod(path, mode))

    def fsync_dir(self, d: Dir) -> None:
        if os.name == "nt":
            return  # Windows cannot open (or flush) a directory through os.open
        fd = os.open(d.path, os.O_RDONLY | O_CLOEXEC)
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(d.path)):
                os.fsync(fd)
        finally:
            os.close(fd)


def _lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _rename_noreplace(src: str, dst: str) -> None:
    """Rename without replacing: Windows's ``os.rename`` refuses an existing destination
    atomically; elsewhere (this backend on POSIX: tests) a checked rename."""
    if os.name == "nt":
        os.rename(src, dst)
        return
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "destination exists", dst)
    os.rename(src, dst)


PORTABLE = PortableBackend()
