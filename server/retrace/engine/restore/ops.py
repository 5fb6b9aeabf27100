"""The vocabulary of a restore's disk apply: what each path's operation is (:class:`DiskOp`),
what the plan saw there (:class:`Seen`), and how an apply ends (:class:`ApplyResult` and its
errors). Shared by the planner's steps, the disk applier, crash recovery and the editor-applied
restore; the applier itself lives in :mod:`retrace.engine.restore.disk`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from retrace.engine.models import FileEntry
from retrace.engine.workspace import Identity

OpKind = Literal["write", "delete", "chmod"]
Source = Callable[[], bytes | None]


@dataclass(frozen=True)
class Seen:
    """What the plan saw at a path: ``entry`` (``None`` = nothing, or a directory when
    ``directory``), and the stat identity it read it with, when known. Without an identity the
    applier verifies the entry's content (streamed) before trusting the path."""

    entry: FileEntry | None
    identity: Identity | None = None
    directory: bool = False
    anything: bool = False
    """Crash recovery: whatever is there now is what gets replaced (still checked again
    immediately before each rename, so a concurrent writer is never overwritten)."""


@dataclass
class DiskOp:
    path: str
    kind: OpKind
    entry: FileEntry | None
    """The intended result (``None`` for a delete)."""
    seen: Seen
    source: Source | None = None
    """For a file ``write``: returns the bytes (``None``: content missing from the store)."""
    replace_directory: bool = False
    """A directory still in the way (untracked content) may be moved to the trash (forced)."""


class ConflictError(Exception):
    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


class ApplyError(Exception):
    def __init__(self, path: str, msg: str) -> None:
        super().__init__(msg)
        self.path = path


class SourceMissingError(ApplyError):
    """A write's recorded bytes could not be had intact (missing or damaged in the store)."""


@dataclass
class ApplyResult:
    ok: bool
    error: str | None = None
    failed_path: str | None = None
    rolled_back: bool = True
    conflicts: dict[str, str] = field(default_factory=dict)
    """Paths that changed between the plan and the apply (then ``ok`` is false)."""
    swept: list[str] = field(default_factory=list)
    """Forced: entries (and everything below them) moved away that no op named."""
    damaged: bool = False
    """The apply stopped because a write's recorded bytes were missing or damaged."""
    renames: dict[str, int] = field(default_factory=dict)
    """Applied: path → how many renames the apply made at that name (moved there or away)."""
