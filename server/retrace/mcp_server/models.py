"""Inputs and outputs of the ``retrace mcp`` tools.

Inputs are strict (``confirm: "yes"`` is refused, not read as true), forbid unknown keys and
bound every size, so a request can neither smuggle a value in nor ask for an unbounded answer.
Field descriptions are what the calling model reads in each tool's input schema. Keys are
camelCase, as everywhere on Retrace's wire; snake_case is accepted too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from retrace.camel import CamelModel
from retrace.engine.models import CheckpointKind, ConflictResolution, FileChange

MAX_LIMIT = 500
DEFAULT_LIMIT = 50
DEFAULT_PATCH_BYTES = 50_000
MAX_PATCH_BYTES = 2_000_000
MIN_PATCH_BYTES = 256
MAX_PATHS = 10_000
MAX_FILES = 1000
"""At most this many files are listed in one ``show_checkpoint`` answer (the rest counted)."""


Path = Annotated[str, Field(min_length=1, max_length=4096)]
"""A path from a request (checked against the workspace by the store access, not here)."""


class ToolInput(CamelModel):
    model_config = ConfigDict(strict=True)


class ListParams(ToolInput):
    session: str | None = Field(default=None, max_length=200, description="Only this session's checkpoints.")
    kind: CheckpointKind | None = Field(
        default=None,
        description="Only checkpoints of this kind: tool (an agent's tool call), external (changes made "
        "by someone else), manual (a named checkpoint), restore, safety, baseline, summary, background.",
    )
    bookmarks: bool = Field(
        default=False,
        description="Only bookmarks: checkpoints a person named (in the editor, or made with a name).",
    )
    tool: str | None = Field(
        default=None, max_length=200, description='Only this tool\'s calls ("Edit", "Bash").'
    )
    path: str | None = Field(
        default=None,
        max_length=4096,
        description="Only checkpoints that changed a path containing this text (workspace-relative; an "
        "absolute path must be inside the workspace).",
    )
    agent: str | None = Field(
        default=None,
        max_length=64,
        description='Only this agent\'s checkpoints ("claude-code", "gemini-cli", "retrace").',
    )
    text: str | None = Field(
        default=None,
        max_length=1000,
        description="Case-insensitive text in the label, tool name or a changed path.",
    )
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="At most this many checkpoints."
    )
    before: str | None = Field(
        default=None,
        max_length=200,
        description="Paging cursor: the nextBefore of the previous answer (only older checkpoints).",
    )


class ShowParams(ToolInput):
    id: str = Field(
        min_length=1, max_length=200, description="Checkpoint id, a unique prefix of one, or head."
    )
    against: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description='Compare with this checkpoint instead of the parent, or "workspace" for the files now.',
    )
    path: str | None = Field(
        default=None, max_length=4096, description="Only this file (workspace-relative)."
    )
    max_bytes: int = Field(
        default=DEFAULT_PATCH_BYTES,
        ge=MIN_PATCH_BYTES,
        le=MAX_PATCH_BYTES,
        description="Cut the patch at this many bytes (a note says so).",
    )


class CreateParams(ToolInput):
    label: str = Field(
        min_length=1, max_length=4096, description="The checkpoint's name, shown in the Retrace timeline."
    )

    @field_validator("label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a checkpoint's name must not be blank")
        return value


class RestoreArgs(ToolInput):
    id: str = Field(
        min_length=1, max_length=200, description="Checkpoint id, a unique prefix of one, or head."
    )
    confirm: bool = Field(
        default=False,
        description="false (default): a dry run, only the plan. true: change the files as planned.",
    )
    resolutions: dict[Path, ConflictResolution] | None = Field(
        default=None,
        max_length=MAX_PATHS,
        description="Per conflicting file (workspace-relative path): overwrite, skip (leave it as it is) or "
        "merge (a clean three-way merge only). A conflict without one refuses the whole restore.",
    )
    paths: list[Path] | None = Field(
        default=None, max_length=MAX_PATHS, description="Restore only these files (workspace-relative)."
    )
    background_tasks: Literal["stop", "keep"] | None = Field(
        default=None,
        description="When Retrace's own agent runs background commands: stop them first, or keep them.",
    )
    while_agent_runs: Literal["proceed"] | None = Field(
        default=None,
        description="When another agent's turn is running (Claude Code, Gemini CLI: its tools could "
        "overwrite what the restore brings back), a confirmed restore is refused unless this is "
        '"proceed" — say so when the running agent is the one asking.',
    )
    git_choice: Literal["filesOnly", "parkFirst"] | None = Field(
        default=None,
        description="When the repository's HEAD or branch moved since the checkpoint, a confirmed restore "
        'is refused unless this says "filesOnly" (restore the files, git untouched) or "parkFirst" (commit '
        "the current state on a new branch retrace/parked-…, then restore).",
    )


# --------------------------------------------------------------------------- outputs


class CheckpointRow(CamelModel):
    id: str
    session: str
    kind: CheckpointKind
    tool: str | None
    label: str
    time: datetime
    files_changed: int
    agent: str | None
    """Who made it: ``meta.agent``, else the session's agent (``agentSession``), ``retrace`` for
    Retrace's own agent's tool calls, else ``None`` (the user, the command line)."""
    parent: str | None
    bookmark: str | None = None
    """Its bookmark name, when a person named it (``None``: not a bookmark)."""


class ListResult(CamelModel):
    checkpoints: list[CheckpointRow]
    next_before: str | None
    """Pass as ``before`` for older checkpoints; ``None``: nothing older matches."""


class ShowResult(CamelModel):
    checkpoint: CheckpointRow
    against: str | None
    """The old side: a checkpoint id, ``workspace`` (then the new side is the checkpoint), or
    ``None`` for a first checkpoint (its files are listed, no patch)."""
    files: list[FileChange]
    files_omitted: int
    """Changed files left out of ``files`` (past :data:`MAX_FILES`)."""
    binary_files: list[str]
    patch: str
    truncated: bool


class CreateResult(CamelModel):
    checkpoint: CheckpointRow
    via: Literal["server", "store"]
    """``server``: the editor's server holding the store recorded it; ``store``: this process."""


class PlannedChange(CamelModel):
    path: str
    action: Literal["create", "overwrite", "delete", "rename", "chmod"] | None
    from_path: str | None = None
    conflict: str | None = None
    """Why this file conflicts (someone else changed it since the agent last wrote it), if it does."""
    status: str | None = None
    """What the restore did with it (``restored``, ``skipped``, ``conflict``…), when known."""


class RestoreResult(CamelModel):
    outcome: Literal["preview", "applied", "conflict", "nothingToRestore", "failed"]
    applied: bool
    dry_run: bool
    target: str
    files: list[PlannedChange]
    conflicts: list[str]
    skipped: list[str]
    checkpoint: str | None
    """The restore's own checkpoint, when it applied."""
    undo: str | None
    """Restore this checkpoint (with ``confirm``) to undo this restore."""
    via: Literal["server", "store"]
    message: str
    rolled_back: bool | None = None
    """For a failed restore: whether every file is back as it was before it."""
