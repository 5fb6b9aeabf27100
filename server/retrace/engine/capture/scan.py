"""What each path holds right now.

* :func:`walk` (:func:`walk_lists`: one list per directory) — a stat walk that never follows
  symlinks and yields files and symlinks; a directory that cannot be listed is reported
  (``on_error``), never silently skipped; a tool folder recognised by a marker inside it is
  skipped whole.
* :func:`read_entry` — the :class:`FileEntry` of one path (and its bytes for storing).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.capture.faults import fire
from retrace.engine.capture.fs import (
    NotRegularFileError,
    kind_of,
    open_dir,
    open_regular,
    read_open,
    too_long,
)
from retrace.engine.capture.ignore import Ignorer, NameFilter
from retrace.engine.capture.statcache import CTIME_RACY_NS
from retrace.engine.config import TOOL_FOLDERS, TOOL_MARKERS
from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry
from retrace.oscompat import has_dir_fd, is_link_like, pread, writers_held_off

Listing = tuple[list[tuple[str, os.stat_result]], list[str]]
"""One directory's non-excluded (files with their lstat, subdirectories)."""


def walk(
    root: Path,
    ignorer: Ignorer,
    start: str = "",
    on_dir: Callable[[str], object] | None = None,
    on_error: Callable[[str, str], object] | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """(relpath, lstat) of every non-excluded regular file and symlink under ``start``.
    ``on_dir`` is called with each directory BEFORE it is listed (to watch it first);
    ``on_error(rel, reason)`` with each directory or entry that could not be read (it is
    unknown, not absent). A directory holding a :data:`TOOL_MARKERS` file is skipped whole."""
    for files in walk_lists(root, ignorer, start, on_dir, on_error):
        yield from files


def walk_lists(
    root: Path,
    ignorer: Ignorer,
    start: str = "",
    on_dir: Callable[[str], object] | None = None,
    on_error: Callable[[str, str], object] | None = None,
) -> Iterator[list[tuple[str, os.stat_result]]]:
    """:func:`walk`, one list per directory (a 50k-file walk resumes a generator per
    directory instead of per file)."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        if on_dir is not None:
            on_dir(d)
        try:
            listed = _list_at(base, d, ignorer, on_error)
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
        if files:
            yield files


@contextmanager
def scandir_at(base: str, d: str) -> Iterator[Iterator[os.DirEntry[str]]]:
    """``os.scandir`` of ``base/d`` at any depth: beyond PATH_MAX it lists (and its entries
    lstat) relative to a directory fd opened component by component."""
    path = os.path.join(base, d) if d else base
    if not too_long(path) or not has_dir_fd():
        with os.scandir(path) as it:
            yield it
        return
    fd = open_dir(base, d)
    try:
        with os.scandir(fd) as it:
            yield it
    finally:
        os.close(fd)


def enterable(entry: os.DirEntry[str]) -> bool:
    """Whether the walk descends into ``entry``: a directory that is not a link. On Windows a
    junction (or any reparse point) is a directory to ``is_dir(follow_symlinks=False)``; its
    cached ``lstat`` attributes say what it is, and it is neither entered nor recorded."""
    if not entry.is_dir(follow_symlinks=False):
        return False
    return os.name != "nt" or not is_link_like(entry.stat(follow_symlinks=False))


def _list_at(
    base: str, d: str, ignorer: Ignorer, on_error: Callable[[str, str], object] | None
) -> Listing | None:
    with scandir_at(base, d) as it:
        return _list_dir(it, d, ignorer, on_error)


def _keep_dir(name: str, rel: str, f: NameFilter | None, ignorer: Ignorer) -> bool:
    if f is None:
        return not ignorer.excluded(rel, True)
    return not (
        name in f.dir_names
        or (f.dir_suffixes and name.endswith(f.dir_suffixes))
        or (name in TOOL_FOLDERS and ignorer.tool_folder(rel))
    )


def _list_dir(
    it: Iterator[os.DirEntry[str]],
    d: str,
    ignorer: Ignorer,
    on_error: Callable[[str, str], object] | None,
) -> Listing | None:
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
            if enterable(entry):
                if _keep_dir(name, prefix + name, f, ignorer):
                    subdirs.append(prefix + name)
                continue
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # vanished since it was listed
        except OSError as exc:
            if on_error is not None:
                on_error(prefix + name, exc.strerror or str(exc))
            continue
        mode = st.st_mode
        if not (S_ISREG(mode) or S_ISLNK(mode)):
            continue
        marked = marked or name in TOOL_MARKERS
        if f is None:
            if excluded(prefix + name, False):
                continue
        elif name in f.file_names or (f.file_suffixes and name.endswith(f.file_suffixes)):
            continue
        files.append((prefix + name, st))
    return None if marked and d else (files, subdirs)


def walk_dirs(
    root: Path, ignorer: Ignorer, start: str = "", on_error: Callable[[str, str], object] | None = None
) -> Iterator[str]:
    """Every non-excluded directory under (and including) ``start``, at any depth;
    ``on_error(rel, reason)`` for each one that could not be listed."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        yield d
        try:
            with scandir_at(base, d) as it:
                for entry in it:
                    try:
                        is_dir = enterable(entry)
                    except OSError:
                        continue
                    rel = f"{d}/{entry.name}" if d else entry.name
                    if is_dir and not ignorer.excluded(rel, True):
                        stack.append(rel)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if on_error is not None:
                on_error(d, exc.strerror or str(exc))


def human_size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


@dataclass
class ReadResult:
    entry: FileEntry
    data: bytes | None
    """Bytes to store (file content or link target); ``None`` when not stored."""
    stat: os.stat_result | None = None
    """The identity the bytes were read under (what the stat cache may record); ``None``: do not
    cache this result."""
    unsure: str | None = None
    """Why no consistent version could be read (the file kept changing, or it is no longer a
    regular file); then ``entry`` stores nothing and the path must be read again next time."""


READ_ATTEMPTS = 3
"""Reads of a file that changes while it is read, before it is reported as unsure."""
RETRY_PAUSES_S = (0.002, 0.01)
"""Back-off before the second and third attempt: long enough for a writer's burst to end."""


SETTLE_NS = CTIME_RACY_NS
"""Where no read lease can be had (see :func:`_one_version`), a file whose ctime is this recent
is read twice and the two reads compared. A write sets ctime when it STARTS, so a write that
began just before the first fstat and is still copying its bytes leaves the identity unchanged
while the read sees part of them; a second read that differs exposes it. Files changed longer
ago than this cost one read (the statcache's racily-clean margin: the same notion of "too
recent to trust a stat")."""


VERIFY_GAP_NS = 30_000_000
"""The second read of a too-recent file (or one open for writing) comes at least this long
after its ctime: a write that stamped that ctime and is still copying then must have stalled
for ~20 ms or more (the kernel's ctime clock is coarse: up to 10 ms behind the true start),
several time slices of a loaded machine. The wait is measured from the ctime, not per file: a
capture of many files written together waits about once. Files changed longer ago pay nothing."""


def identity(st: os.stat_result) -> tuple[int, int, int, int, int, int]:
    """What a write or replacement changes: device, inode, size, mtime, ctime (which no writer
    can set back), mode."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def read_entry(
    abs_path: str, st: os.stat_result, max_bytes: int, dir_fd: int | None = None
) -> ReadResult | None:
    """The entry of a file or symlink (``None`` if it vanished or ``st`` is another file type).
    With ``dir_fd``, ``abs_path`` is a name relative to that directory (see :func:`at`).

    A regular file is read only as ONE version: the open descriptor's identity before and after
    the read must equal the ``lstat`` that chose it (``st``); otherwise (a writer rewriting it in
    place, a replacement, a type change) it is looked at again, at most :data:`READ_ATTEMPTS`
    times with a short back-off, and then reported ``unsure``, never stored as a mix."""
    reason = ""
    for attempt in range(READ_ATTEMPTS):
        if attempt:
            time.sleep(RETRY_PAUSES_S[min(attempt, len(RETRY_PAUSES_S)) - 1])
            try:
                st = os.stat(abs_path, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            except OSError as exc:
                return _unsure(st, f"unreadable ({exc.strerror})")
        if stat.S_ISLNK(st.st_mode):
            return _read_link(abs_path, dir_fd, st)
        if not stat.S_ISREG(st.st_mode):
            return (
                None if not attempt else _unsure(st, f"not a regular file ({kind_of(st.st_mode)}) when read")
            )
        got = _read_file(abs_path, st, max_bytes, dir_fd)
        if not isinstance(got, str):
            return got
        reason = got
    return _unsure(st, f"{reason} ({READ_ATTEMPTS} attempts)")


def _read_link(abs_path: str, dir_fd: int | None, st: os.stat_result) -> ReadResult | None:
    try:
        target = os.readlink(abs_path, dir_fd=dir_fd)
    except OSError:
        return None
    data = os.fsencode(target)
    return ReadResult(
        make_entry("symlink", hashlib.sha256(data).hexdigest(), len(data), target=target), data, st
    )


def _unstored(size: int, executable: bool, reason: str) -> ReadResult:
    return ReadResult(make_entry("file", None, size, executable=executable, unstored=reason), None)


def _unsure(st: os.stat_result, reason: str) -> ReadResult:
    r = _unstored(st.st_size, bool(st.st_mode & stat.S_IXUSR), reason)
    r.unsure = reason
    return r


def _read_file(
    abs_path: str, st: os.stat_result, max_bytes: int, dir_fd: int | None
) -> ReadResult | str | None:
    """One attempt: the result, ``None`` (vanished) or why the read was not one version."""
    executable = bool(st.st_mode & stat.S_IXUSR)
    size = st.st_size
    if size > max_bytes:
        return _unstored(size, executable, _over_cap(size, max_bytes))
    opened = _open(abs_path, st, dir_fd)
    if not isinstance(opened, tuple):
        return opened
    fd, before = opened
    try:
        data = _one_version(fd, abs_path, st, before, max_bytes)
    except OSError as exc:
        return _unstored(size, executable, f"unreadable ({exc.strerror})")
    finally:
        os.close(fd)
    if data is None:
        return "changing while it was read"
    return ReadResult(
        make_entry("file", hashlib.sha256(data).hexdigest(), len(data), executable=executable), data, before
    )


def _open(
    abs_path: str, st: os.stat_result, dir_fd: int | None
) -> tuple[int, os.stat_result] | ReadResult | str | None:
    """(fd, fstat) of the regular file, or the attempt's outcome (see :func:`_read_file`)."""
    try:
        return open_regular(abs_path, dir_fd)
    except FileNotFoundError:
        return None
    except NotRegularFileError:
        return "its type changed while it was read"
    except OSError as exc:
        return _unstored(st.st_size, bool(st.st_mode & stat.S_IXUSR), f"unreadable ({exc.strerror})")


def _one_version(
    fd: int, abs_path: str, st: os.stat_result, before: os.stat_result, max_bytes: int
) -> bytes | None:
    """The bytes of ``fd`` if they are one version of the file ``st`` chose, else ``None``.

    The identity check is the guard, and it is blind to a write still copying its bytes (the
    write stamped ctime when it STARTED, before our fstat). So a file whose ctime is within
    :data:`SETTLE_NS` is read with writers held off (:func:`~retrace.oscompat.writers_held_off`:
    then the bytes are one version); where some process holds it open for writing, or no lease
    can be had, it is read a second time — at least :data:`VERIFY_GAP_NS` after its ctime — and
    both reads must agree under the same identity. Older files cost one read: the lease is not
    free (4 KiB files, ``python -m bench.torn_guard``: 31.7 µs a fresh file against 19.1 µs a
    settled one; a second read cost ~1 µs, but proves nothing against a stalled writer)."""
    if identity(before) != identity(st):
        return None  # changed between the listing and the open
    size = st.st_size
    recent = time.time_ns() - before.st_ctime_ns < SETTLE_NS
    fire("read", abs_path)
    with writers_held_off(fd) if recent else nullcontext("unknown") as writers:
        data = read_open(fd, size + 1, max_bytes + 1)
    if identity(os.fstat(fd)) != identity(before) or len(data) != size:
        return None
    if not recent or writers == "held":
        return data
    wait_ns = before.st_ctime_ns + VERIFY_GAP_NS - time.time_ns()
    if wait_ns > 0:
        time.sleep(wait_ns / 1e9)
    fire("verify", abs_path)
    if pread(fd, size + 1, 0) != data or identity(os.fstat(fd)) != identity(before):
        return None
    return data


def _over_cap(size: int, max_bytes: int) -> str:
    return f"over size cap ({human_size(size)} > {human_size(max_bytes)})"
