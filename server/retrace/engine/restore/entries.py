"""Small pieces of the disk applier that need no transaction: the mode a restored file gets,
the process umask, streamed hashing, and the first parent of a path that is not a real directory."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from retrace.engine.workspace import DirTree, EscapeError

CHUNK = 1 << 20


def exec_mode(mode: int, executable: bool) -> int:
    perms = stat.S_IMODE(mode)
    if executable:
        return perms | ((perms & 0o444) >> 2) | stat.S_IXUSR
    return perms & ~0o111


def process_umask() -> int | None:
    """The process umask, read without changing it (``None`` where the kernel does not say)."""
    try:
        with Path("/proc/self/status").open(encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def hash_fd(fd: int) -> str:
    h = hashlib.sha256()
    while chunk := os.read(fd, CHUNK):
        h.update(chunk)
    return h.hexdigest()


def write_hashed(fd: int, data: bytes) -> str:
    """Write all of ``data`` to ``fd`` and return the sha256 of exactly the bytes the kernel
    accepted, in order (what was WRITTEN, without reading it back)."""
    h = hashlib.sha256()
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        h.update(view[:n])
        view = view[n:]
    return h.hexdigest()


def blocking_ancestor(tree: DirTree, rel: str) -> str:
    """The first parent component of ``rel`` that is not a real directory ("" if none)."""
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        try:
            st = tree.lstat(prefix)
        except (NotADirectoryError, EscapeError):
            continue
        if st is None or not stat.S_ISDIR(st.st_mode):
            return prefix
    return ""
