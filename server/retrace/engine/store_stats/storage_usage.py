"""Bytes on disk of a store, by kind: THE storage figure (the status bar's ``totalBytes``, the
Health panel's storage, ``retrace stats``, the storage alerts and their time series).

* ``blobs`` — loose blobs; ``packs`` — the blob packs; ``journals`` — everything under
  ``sessions/``; ``other`` — the rest of the store (caches, the lock, configuration);
* ``subagents`` — the subagent stores under ``tasks/`` (real folders only, links not followed:
  :func:`~retrace.engine.store.task_dirs.tasks_bytes`).

The total, subagents included, is what the figure and its alerts compare with retention's
``maxBytes``; retention's own size quota still drops only the main store's checkpoints (a big
running subagent must not empty the parent's history: ``engine/gc.py: store_bytes``), while
finished subagent stores go by :mod:`retrace.app.task_stores`. The remote cache ``remote/`` is
outside. Read from the files: no lock, no engine.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.task_dirs import tasks_bytes


@dataclass(frozen=True)
class Usage:
    blobs: int = 0
    packs: int = 0
    journals: int = 0
    other: int = 0
    subagents: int = 0

    @property
    def total(self) -> int:
        return self.blobs + self.packs + self.journals + self.other + self.subagents

    def by_kind(self) -> dict[str, int]:
        return {
            "blobs": self.blobs,
            "packs": self.packs,
            "journals": self.journals,
            "other": self.other,
            "subagents": self.subagents,
        }


def _walk_bytes(root: Path, skip: set[str]) -> int:
    total = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in skip]  # noqa: PTH118
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size  # noqa: PTH118
    return total


def usage(layout: StoreLayout) -> Usage:
    """The store's bytes by kind, measured now."""
    packs_dir = layout.blobs / "packs"
    packs = _walk_bytes(packs_dir, set())
    blobs = _walk_bytes(layout.blobs, {str(packs_dir)})
    journals = _walk_bytes(layout.sessions, set())
    outside = {str(layout.blobs), str(layout.sessions), str(layout.tasks), str(layout.remote)}
    other = _walk_bytes(layout.root, outside)
    subagents = tasks_bytes(layout)
    return Usage(blobs=blobs, packs=packs, journals=journals, other=other, subagents=subagents)
