"""Per-hunk review and restore on the wire (``retrace/restore/hunks``, ``retrace/restore/hunk``).

The server computes the hunks (:mod:`retrace.app.hunks`) between a checkpoint's version of one
file and the text the editor shows now, and restores one of them through the editor's workspace
edit API (:mod:`retrace.lsp.services.restore_hunk`). A hunk id is valid for one current text
only: every restore names the ``currentHash`` it was computed from, and a file changed since is
the error ``hunkConflict`` (nothing written)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from retrace.agent.notifications import BackgroundTaskView
from retrace.camel import CamelModel
from retrace.engine.models import Checkpoint

MAX_HUNKS = 500


class HunksParams(CamelModel):
    checkpoint: str = Field(min_length=1, max_length=200)
    """The checkpoint whose version of the file is the base (id or unique prefix)."""
    path: str = Field(min_length=1, max_length=4096)
    """Workspace-relative path."""


class HunkView(CamelModel):
    id: str
    """``"<baseStart>,<baseCount>,<currentStart>,<currentCount>"``: valid with ``currentHash``."""
    base_start: int
    base_count: int
    current_start: int
    """0-based first line of the hunk in the current text (where an insertion-less hunk sits)."""
    current_count: int
    base_text: str
    """The checkpoint's lines (what an undo of this hunk puts back)."""
    current_text: str


class HunksResult(CamelModel):
    path: str
    checkpoint: str
    """The base checkpoint's full id."""
    current_hash: str
    """sha256 of the current text (the editor's buffer when open): name it when restoring."""
    hunks: list[HunkView]
    truncated: bool = False
    """More than the hunks listed (a file rewritten almost whole): restore the file instead."""


class RestoreHunkParams(CamelModel):
    checkpoint: str = Field(min_length=1, max_length=200)
    path: str = Field(min_length=1, max_length=4096)
    hunk: str = Field(min_length=1, max_length=100)
    """A ``HunkView.id`` from ``retrace/restore/hunks``."""
    expected_hash: str = Field(min_length=64, max_length=64)
    """The ``currentHash`` the hunk was computed from."""
    background_tasks: Literal["stop", "keep"] | None = None
    """As for ``retrace/checkpoint/restore``: a running background command may write the file, so
    while one runs the hunk restore is refused with ``backgroundTasksRunning`` unless ``stop`` or
    ``keep`` is given (nothing written, nothing stopped)."""


class RestoreHunkResult(CamelModel):
    checkpoint: Checkpoint
    """The ``restore`` checkpoint recording the file with the hunk put back."""
    safety_checkpoint_id: str
    """The state just before (what *Undo last restore* goes back to)."""
    current_hash: str
    """The file's text hash now."""
    background_tasks: list[BackgroundTaskView] = Field(default_factory=list)
    """Background commands running when the hunk was restored (after ``stop``: the ones stopped)."""
