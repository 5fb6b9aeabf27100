"""The entries of a store's ``tasks/`` folder (the subagent stores) as ``lstat`` sees them.

Read by the store's figures (:mod:`retrace.engine.store_stats`: the subagents' part of the
storage) and by subagent-store retention (:mod:`retrace.app.task_stores`). Files only, no engine,
no lock. Only real folders are entered or measured: a link named like a subagent store (or a
``tasks`` that is itself a link) is never followed; sizes are ``lstat`` sizes of the files below.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from typing import Literal

from retrace.engine.store.layout import StoreLayout

EntryKind = Literal["dir", "link", "file", "other"]


@dataclass(frozen=True)
class TaskDir:
    """One entry of ``<store>/tasks/`` as ``lstat`` sees it (``bytes``: real folders only)."""

    name: str
    kind: EntryKind
    bytes: int = 0


def _kind(mode: int) -> EntryKind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def folder_bytes(path: str) -> int:
    """Bytes of the files under ``path`` (links not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size  # noqa: PTH118
    return total


def tasks_root(layout: StoreLayout) -> str | None:
    """``<store>/tasks`` when it is a real folder (a link there is never entered)."""
    try:
        st = os.lstat(layout.tasks)
    except OSError:
        return None
    return str(layout.tasks) if stat.S_ISDIR(st.st_mode) else None


def scan(layout: StoreLayout, *, sizes: bool = True) -> tuple[list[TaskDir], list[str]]:
    """The entries of ``tasks/`` (sorted by name) and notes on what cannot be looked into."""
    root = tasks_root(layout)
    if root is None:
        note = [] if not os.path.lexists(layout.tasks) else [f"{layout.tasks} is not a folder: left alone"]
        return [], note
    out: list[TaskDir] = []
    with os.scandir(root) as entries:
        for entry in entries:
            try:
                kind = _kind(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            size = folder_bytes(entry.path) if kind == "dir" and sizes else 0
            out.append(TaskDir(entry.name, kind, size))
    return sorted(out, key=lambda d: d.name), []


def tasks_bytes(layout: StoreLayout) -> int:
    """The bytes of the subagent stores (real folders under ``tasks/``; links not followed)."""
    return sum(d.bytes for d in scan(layout)[0])
