"""Per-file history on the wire (``retrace/file/history``): the checkpoints that touched one
file, newest first, paged. Built by :mod:`retrace.app.file_history`; the client only renders it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.models import CheckpointKind

FileChangeKind = Literal["created", "modified", "deleted", "renamed"]
"""What a checkpoint did to the file: ``renamed`` either brought it here (``renamedFrom``) or took
it away (``renamedTo``; the file no longer exists at this path after it)."""

MAX_FILE_HISTORY_LIMIT = 1000


class FileHistoryParams(CamelModel):
    path: str
    """Workspace-relative path (an absolute path is accepted only inside the workspace)."""
    session_id: str | None = None
    """Only this session's checkpoints; all sessions when absent."""
    cursor: str | None = None
    """``nextCursor`` of the previous page; absent for the first (newest) page."""
    limit: int = Field(default=100, ge=1, le=MAX_FILE_HISTORY_LIMIT)


class FileVersion(CamelModel):
    """One checkpoint that changed the file, and what the file was right after it."""

    checkpoint_id: str
    parent_id: str | None
    """The checkpoint before it (the previous version of the file lives there); ``null`` for the
    first baseline."""
    session_id: str
    created_at: datetime
    kind: CheckpointKind
    title: str
    """The checkpoint's title as the timeline words it ("edit_file", "Restored code to …")."""
    summary: str
    """This file's change in a few words: "+3 −1", "created, +4 −0", "renamed from a.txt"."""
    change: FileChangeKind
    renamed_from: str | None
    renamed_to: str | None
    exists: bool
    """The file exists at this path right after the checkpoint (``false`` after a delete or a
    rename away): there is a version to open."""
    hash: str | None
    """Content hash of the file after the checkpoint (``null`` when absent or not stored)."""
    additions: int | None
    """Line statistics for this file when known (``null``: not counted, e.g. binary)."""
    deletions: int | None
    binary: bool
    approximate: bool


class FileHistoryResult(CamelModel):
    path: str
    """The normalised workspace-relative path the history is for."""
    versions: list[FileVersion]
    """Newest first."""
    next_cursor: str | None
    """Pass as ``cursor`` for the next (older) page; ``null`` when this was the last."""
