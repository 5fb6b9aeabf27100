"""What each path holds right now.

* :func:`walk` — a stat walk that never follows symlinks and yields files and symlinks; a
  directory that cannot be listed is reported (``on_error``), never silently skipped; a tool
  folder recognised by a marker inside it is skipped whole.
* :func:`read_entry` — the :class:`FileEntry` of one path (and its bytes for storing).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.capture.fs import open_dir, read_fd, too_long
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.config import TOOL_FOLDERS, TOOL_MARKERS
from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry


def walk(
    root: Path,
    ignorer: Ignorer,
    start: str = "",
    on_dir: Callable[[str], object] | None = None,
    on_error: Callable[[str, str], object] | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """(relpath, lstat) of every non-excluded regular file and symlink under ``start``.
    ``on_dir`` is called with each directory BEFORE it is listed (to watch it first);
    ``on_error(rel, reason)`` with each directory that could not be listed (its files are
    unknown, not absent). A directory holding a :data:`TOOL_MARKERS` file is skipped whole."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        if on_dir is not None:
            on_dir(d)
        try:
            listed = _list_at(base, d, ignorer)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if on_error is not None:
                on_error(d, exc.strerror or str(exc))
            continue
        if listed is None:
            continue
        files, subdirs = listed
        stack.extend(subdirs)
        yield from files


def _list_at(
    base: str, d: str, ignorer: Ignorer
) -> tuple[list[tuple[str, os.stat_result]], list[str]] | None:
    path = os.path.join(base, d) if d else base
    if not too_long(path):
        with os.scandir(path) as it:
            return _list_dir(it, d, ignorer)
    fd = open_dir(base, d)  # beyond PATH_MAX: list (and lstat) relative to a directory fd
    try:
        with os.scandir(fd) as it:
            return _list_dir(it, d, ignorer)
    finally:
        os.close(fd)


def _list_dir(
    it: Iterator[os.DirEntry[str]], d: str, ignorer: Ignorer
) -> tuple[list[tuple[str, os.stat_result]], list[str]] | None:
    """Non-excluded files and subdirectories of one directory; ``None`` for a tool folder."""
    excluded = ignorer.excluded
    S_ISREG, S_ISLNK = stat.S_ISREG, stat.S_ISLNK  # noqa: N806 - hot loop: locals
    # The ignore decision is the walk's main cost after lstat: name tests computed once
    # per directory replace a rule-chain evaluation per entry.
    f = ignorer.name_filter(d)
    prefix = d + "/" if d else ""
    files: list[tuple[str, os.stat_result]] = []
    subdirs: list[str] = []
    marked = False
    for entry in it:
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                rel = prefix + name
                if f is None:
                    if not excluded(rel, True):
                        subdirs.append(rel)
                elif not (
                    name in f.dir_names
                    or (f.dir_suffixes and name.endswith(f.dir_suffixes))
                    or (name in TOOL_FOLDERS and ignorer.tool_folder(rel))
                ):
                    subdirs.append(rel)
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        mode = st.st_mode
        if not (S_ISREG(mode) or S_ISLNK(mode)):
            continue
        if name in TOOL_MARKERS:
            marked = True
        if f is None:
            if excluded(prefix + name, False):
                continue
        elif name in f.file_names or (f.file_suffixes and name.endswith(f.file_suffixes)):
            continue
        files.append((prefix + name, st))
    if marked and d:
        return None
    return files, subdirs


def walk_dirs(root: Path, ignorer: Ignorer, start: str = "") -> Iterator[str]:
    """Every non-excluded directory under (and including) ``start``."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        yield d
        try:
            it = os.scandir(os.path.join(base, d) if d else base)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                rel = f"{d}/{entry.name}" if d else entry.name
                if is_dir and not ignorer.excluded(rel, True):
                    stack.append(rel)


def human_size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


@dataclass
class ReadResult:
    entry: FileEntry
    data: bytes | None
    """Bytes to store (file content or link target); ``None`` when not stored."""


def read_entry(
    abs_path: str, st: os.stat_result, max_bytes: int, dir_fd: int | None = None
) -> ReadResult | None:
    """The entry of a file or symlink (``None`` if it vanished or is another file type).
    With ``dir_fd``, ``abs_path`` is a name relative to that directory (see :func:`at`)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(abs_path, dir_fd=dir_fd)
        except OSError:
            return None
        data = os.fsencode(target)
        return ReadResult(
            make_entry("symlink", hashlib.sha256(data).hexdigest(), len(data), target=target), data
        )
    if not stat.S_ISREG(mode):
        return None
    executable = bool(mode & stat.S_IXUSR)
    if st.st_size > max_bytes:
        reason = f"over size cap ({human_size(st.st_size)} > {human_size(max_bytes)})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    try:
        fd = os.open(abs_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = f"unreadable ({exc.strerror})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    try:
        data = read_fd(fd, min(st.st_size, max_bytes) + 1, max_bytes + 1)
    except OSError as exc:
        reason = f"unreadable ({exc.strerror})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    if len(data) > max_bytes:
        reason = f"over size cap ({human_size(len(data))} > {human_size(max_bytes)})"
        return ReadResult(make_entry("file", None, len(data), executable=executable, unstored=reason), None)
    return ReadResult(
        make_entry("file", hashlib.sha256(data).hexdigest(), len(data), executable=executable), data
    )
