"""Linux inotify watcher (ctypes on libc) giving a COMPLETE dirty set synchronously.

Why not a watcher library with a background thread and a debounce: after a shell command has
exited, every event it caused is already queued in the kernel, so a non-blocking ``read`` until
``EAGAIN`` (:meth:`Watcher.drain`) returns all of them, with no sleep. Every non-excluded
directory is watched (never through a symlink); a directory that appears is watched at drain
time and reported dirty, so the capture scans it AFTER its watch exists and files created
before the watch cannot slip through. Queue overflow, a watch-limit hit, a changed
``.gitignore`` or any error makes the watcher unhealthy: the caller then does a full stat walk
and :meth:`Watcher.rebuild`.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from retrace import oscompat
from retrace.engine.capture.fs import open_dir, too_long
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.scan import walk_dirs
from retrace.engine.config import TOOL_FOLDERS, TOOL_MARKERS

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000  # O_NONBLOCK on Linux, the only platform with inotify
IN_CLOEXEC = 0o2000000

WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
)
_HEADER = struct.Struct("iIII")
RULE_MARKERS = frozenset({*TOOL_MARKERS, *(m for t in TOOL_FOLDERS.values() for m in (*t.inside, *t.beside))})
"""Files whose appearance or removal turns a directory into a tool folder or back."""


@dataclass
class DirtySet:
    files: set[str] = field(default_factory=set)
    """Paths of non-directories (or unknown kind) that were touched."""
    dirs: set[str] = field(default_factory=set)
    """Directories that appeared, disappeared or moved: rescan them as a whole."""

    def update(self, other: DirtySet) -> None:
        self.files |= other.files
        self.dirs |= other.dirs

    def __bool__(self) -> bool:
        return bool(self.files or self.dirs)


def _libc() -> ctypes.CDLL | None:
    lib = oscompat.libc()
    if lib is None:
        return None
    try:
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    except AttributeError:
        return None
    return lib


class Watcher:
    """Recursive inotify watch of a workspace. ``healthy`` False → callers must stat-walk."""

    def __init__(self, workspace: Path, ignorer: Ignorer) -> None:
        self.workspace = workspace
        self.ignorer = ignorer
        self._lib = _libc()
        self._fd = -1
        self._wd: dict[int, str] = {}
        self.healthy = False
        self.reason = "not started"
        self.available = self._lib is not None
        self.exhausted = False
        """The watch limit was hit: re-watching would fail again, so callers just stat-walk."""
        self.quiet_markers: frozenset[str] = frozenset()
        """Marker files the engine itself is replacing (present before and after: no folder
        changes its kind): their rename events do not invalidate. The engine checks their
        events afterwards and invalidates unless they were exactly its own."""

    def start(self, *, watch_tree: bool = True) -> bool:
        """(Re)create the inotify instance and watch every non-excluded directory (or, with
        ``watch_tree`` False, none yet: the caller's walk calls :meth:`add_dir` per directory)."""
        self.close()
        if self._lib is None:
            self.reason = (
                f"inotify is not available on this platform ({sys.platform}): stat walks find changes"
            )
            return False
        fd = self._lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            self.reason = f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
            return False
        self._fd = fd
        self.healthy = True
        self.reason = ""
        if watch_tree:
            self._watch_tree("")
        return self.healthy

    def add_dir(self, rel: str) -> None:
        if self.healthy:
            self._add(rel)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._wd.clear()
        self.healthy = False

    def invalidate(self, reason: str) -> None:
        self.healthy = False
        self.reason = reason

    def _add(self, rel: str) -> None:
        assert self._lib is not None
        full = os.path.join(self.workspace, rel) if rel else str(self.workspace)
        if too_long(full):
            wd, err = self._add_deep(rel)
        else:
            wd = self._lib.inotify_add_watch(self._fd, os.fsencode(full), WATCH_MASK)
            err = ctypes.get_errno() if wd < 0 else 0
        if wd < 0:
            if err in (errno.ENOENT, errno.ENOTDIR):
                return  # vanished meanwhile: its parent's event reports it
            if err == errno.ENOSPC:
                self.exhausted = True
                self.invalidate("inotify watch limit reached (raise fs.inotify.max_user_watches)")
            else:
                self.invalidate(f"inotify_add_watch({rel or '.'}) failed: {os.strerror(err)}")
            return
        self._wd[wd] = rel

    def _add_deep(self, rel: str) -> tuple[int, int]:
        """Watch a directory beyond PATH_MAX through a short ``/proc/self/fd`` name of a
        directory fd opened component by component: (watch descriptor, errno)."""
        assert self._lib is not None
        try:
            fd = open_dir(str(self.workspace), rel)
        except OSError as exc:
            return -1, exc.errno or errno.EIO
        try:
            # The magic link must be followed to reach the directory; the fd itself was opened
            # without following any symlink.
            mask = WATCH_MASK & ~IN_DONT_FOLLOW
            wd = self._lib.inotify_add_watch(self._fd, f"/proc/self/fd/{fd}".encode(), mask)
            return wd, ctypes.get_errno() if wd < 0 else 0
        finally:
            os.close(fd)

    def _watch_tree(self, rel: str) -> None:
        def unlisted(d: str, why: str) -> None:
            # A directory it cannot list may hold directories it cannot watch: not complete.
            self.invalidate(f"cannot list {d or '.'} to watch it: {why}")

        for d in walk_dirs(self.workspace, self.ignorer, rel, on_error=unlisted):
            if not self.healthy:
                return
            self._add(d)

    def drain(self, log: dict[str, list[int]] | None = None) -> DirtySet:
        """Everything touched since the last drain (non-blocking; complete while healthy).
        With ``log``, the mask of every event about a non-directory is appended to
        ``log[path]`` too, in the order the kernel queued them."""
        dirty = DirtySet()
        if self._fd < 0:
            self.invalidate(self.reason or "not started")
            return dirty
        new_dirs: list[str] = []
        for buf in self._read_events():
            off = 0
            while off + _HEADER.size <= len(buf):
                wd, mask, _cookie, length = _HEADER.unpack_from(buf, off)
                name_b = buf[off + _HEADER.size : off + _HEADER.size + length].rstrip(b"\0")
                off += _HEADER.size + length
                rel = self._event_path(wd, mask, name_b)
                if rel is None:
                    continue
                if not mask & IN_ISDIR:
                    self._file_event(rel, mask, dirty)
                    if log is not None:
                        log.setdefault(rel, []).append(mask)
                elif mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE):
                    dirty.dirs.add(rel)
                    if mask & (IN_CREATE | IN_MOVED_TO):
                        new_dirs.append(rel)
        for d in new_dirs:
            if self.healthy and not self.ignorer.excluded_path(d, True):
                self._watch_tree(d)
        return dirty

    def _read_events(self) -> Iterator[bytes]:
        """Every queued event buffer, until the queue is empty (never blocks)."""
        while True:
            try:
                buf = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError as exc:
                self.invalidate(f"reading inotify events failed: {exc}")
                return
            if not buf:
                return
            yield buf

    def marker_changed(self, rel: str) -> None:
        """A rule marker at ``rel`` may have appeared or gone: re-evaluate with a walk."""
        self.ignorer.forget(rel.rpartition("/")[0])
        self.invalidate(f"{rel} changed: ignore rules must be re-evaluated")

    def _event_path(self, wd: int, mask: int, name_b: bytes) -> str | None:
        """The workspace-relative path an event is about (``None``: nothing to record)."""
        if mask & IN_Q_OVERFLOW:
            self.invalidate("inotify event queue overflowed")
            return None
        base = self._wd.get(wd)
        if mask & IN_IGNORED:
            self._wd.pop(wd, None)
            return None
        if base is None:
            return None
        if not name_b:
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF) and base == "":
                self.invalidate("the workspace directory itself was moved or deleted")
            return None
        name = os.fsdecode(name_b)
        return f"{base}/{name}" if base else name

    def _file_event(self, rel: str, mask: int, dirty: DirtySet) -> None:
        cut = rel.rfind("/")
        base, name = (rel[:cut], rel[cut + 1 :]) if cut > 0 else ("", rel)
        if name == ".gitignore" or (
            name in RULE_MARKERS
            and mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
            and not (mask & (IN_MOVED_FROM | IN_MOVED_TO) and rel in self.quiet_markers)
        ):
            # What is tracked under ``base`` may change: a walk re-evaluates it.
            self.ignorer.forget(base)
            self.invalidate(f"{rel} changed: ignore rules must be re-evaluated")
        dirty.files.add(rel)
