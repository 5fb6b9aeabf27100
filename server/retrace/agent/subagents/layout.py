"""Where a child agent's files live: ``<parent store>/tasks/<task id>/`` holds ``work/`` (the
child's isolated workspace copy: outside the user's folder, so nothing the child does can touch
the user's files) and ``store/`` (the child's own Retrace store: its checkpoint timeline and
conversation journal, readable by every engine tool, e.g. ``retrace log``).

A parent restore or garbage collection never removes these folders: a child's timeline stays
until the user discards it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrace.engine.store.layout import StoreLayout

TASKS_DIR = "tasks"
"""The name of :attr:`StoreLayout.tasks` in the journal's relative store paths."""


@dataclass(frozen=True)
class TaskPaths:
    parent_store: Path
    task_id: str

    @property
    def root(self) -> Path:
        return StoreLayout(self.parent_store).tasks / self.task_id

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def store_rel(self) -> str:
        """The child store relative to the parent store (what the journal records)."""
        return f"{TASKS_DIR}/{self.task_id}/store"

    @classmethod
    def from_rel(cls, parent_store: Path, store_rel: str) -> TaskPaths:
        parts = store_rel.split("/")
        if len(parts) != 3 or parts[0] != TASKS_DIR or parts[2] != "store" or parts[1] in ("", ".", ".."):
            raise ValueError(f"not a task store path: {store_rel!r}")
        return cls(parent_store, parts[1])
