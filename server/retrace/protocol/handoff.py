"""Hand-off to other tools on the wire: ``retrace/export/git`` (a checkpoint as a commit on a
new git branch) and ``retrace/attribution`` (who wrote which lines, as an Agent Trace record).

The attribution record follows the open Agent Trace format (version 0.1.0: ``version``, ``id``,
``timestamp``, ``vcs``, ``tool``, ``files[].conversations[].contributor/ranges/related``,
``metadata`` with reverse-domain vendor keys), so its keys are snake_case as that format writes
them, not camelCase like the rest of the protocol. Retrace's own facts live under
``metadata["dev.retrace"]`` (the range, the checkpoints with kind, tool, turn and prompt) and, per
conversation, in ``related`` entries of type ``checkpoint`` (url ``retrace:checkpoint/<id>``).
Every line of every text file at B belongs to exactly one range; a file whose attribution
ran out of its time budget is marked ``approximate`` in the metadata.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrace.camel import CamelModel
from retrace.engine.models import CheckpointKind

AGENT_TRACE_VERSION = "0.1.0"
ContributorType = Literal["human", "ai", "mixed", "unknown"]


class GitSettings(CamelModel):
    """``retrace.git.*`` settings."""

    mirror_turns: bool = False
    """Commit each turn's end state onto ``refs/heads/retrace/<session id>`` (never checked out)."""


class GitExportParams(CamelModel):
    checkpoint_id: str
    branch: str
    """The new branch's name (``refs/heads/<branch>``); an existing branch is refused."""
    message: str | None = None
    """Commit message; default: the session's turn prompts up to the checkpoint."""
    author: str | None = None
    """``Name <email>``; default: the user's git identity, else ``Retrace <retrace@localhost>``."""
    base: str | None = None
    """Parent commit (any revision); default ``HEAD`` (unborn: a root commit)."""


class GitExportResult(CamelModel):
    commit: str
    branch: str
    files: int
    """Files of the checkpoint written to the commit's tree."""
    base: str | None
    """The parent commit (``null``: a root commit)."""


class AttributionParams(CamelModel):
    from_checkpoint: str | None = None
    """Range start, excluded (as git's ``A..B``): lines present here are attributed to it as
    ``unknown`` (default: the root of ``toCheckpoint``'s ancestry)."""
    to_checkpoint: str | None = None
    """The state whose lines are attributed (default: the head)."""


class _Trace(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceRange(_Trace):
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)


class TraceContributor(_Trace):
    type: ContributorType


class TraceRelated(_Trace):
    type: str
    url: str


class TraceConversation(_Trace):
    contributor: TraceContributor
    ranges: list[TraceRange]
    related: list[TraceRelated] = Field(default_factory=list)


class TraceFile(_Trace):
    path: str
    conversations: list[TraceConversation]


class TraceTool(_Trace):
    name: str
    version: str


class RetraceCheckpointInfo(CamelModel):
    kind: CheckpointKind
    tool: str | None = None
    session_id: str
    turn_id: str | None = None
    prompt: str | None = None
    created_at: str


class RetraceTraceMeta(CamelModel):
    from_checkpoint: str | None
    to_checkpoint: str
    checkpoints: dict[str, RetraceCheckpointInfo]
    approximate: list[str] = Field(default_factory=list)
    """Files whose line attribution hit its time budget: their ranges are coarser than exact."""
    binary: list[str] = Field(default_factory=list)
    """Files at B that are not text (binary content, symlinks): no line ranges; their owner is in
    ``fileOwners``."""
    file_owners: dict[str, str] = Field(default_factory=dict)
    """Path → checkpoint that last wrote the file (every file at B, text or not)."""


class TraceRecord(_Trace):
    """One Agent Trace record: the line attribution of every file at ``to_checkpoint``."""

    version: str = AGENT_TRACE_VERSION
    id: str
    timestamp: str
    tool: TraceTool
    files: list[TraceFile]
    metadata: dict[str, RetraceTraceMeta]
