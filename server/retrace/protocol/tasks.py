"""Subagents on the wire (``retrace/tasks/*``): a session's children as its journal records them,
a child's own timeline, applying a child's result again, discarding a child. Built by
:mod:`retrace.agent.subagents.service`; the client only renders and forwards.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.models import Checkpoint

TaskStatus = Literal[
    "running", "merged", "conflicts", "finished", "failed", "cancelled", "interrupted", "discarded"
]


class TaskRef(CamelModel):
    """A subagent, named by its parent session and its task id: given to a read or restore
    request, the request works on that child's own timeline and workspace copy instead."""

    session_id: str
    task_id: str


class TaskConflict(CamelModel):
    path: str
    reason: str


class TaskView(CamelModel):
    """One child of a session: its ``task`` call, state, what it merged and its metrics."""

    task_id: str
    tool_call_id: str
    description: str
    status: TaskStatus
    child_session_id: str
    base: str | None = None
    """The parent checkpoint the child started from."""
    turn_id: str | None = None
    merged: list[str] = Field(default_factory=list)
    conflicts: list[TaskConflict] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    """``toolCalls``, ``checkpoints``, ``durationMs``, ``conflicts``, ``parallel`` (children of its
    reply working at once), ``serverPeakRssMiB`` (children run inside the server process)."""
    resumable: bool = False
    """``retrace/tasks/resume`` accepts it now (the client offers "resume" only then)."""


class TasksListParams(CamelModel):
    session_id: str


class TasksListResult(CamelModel):
    tasks: list[TaskView]


class TaskParams(CamelModel):
    session_id: str
    task_id: str


class TaskTimelineResult(CamelModel):
    checkpoints: list[Checkpoint]
    """The child's own checkpoints, oldest first (its baseline is the copy it started from)."""


class TaskApplyResult(CamelModel):
    checkpoint: Checkpoint | None
    """The parent checkpoint that records the applied change (``None``: nothing was written)."""
    written: list[str]
    conflicts: list[TaskConflict]


class TaskResumeResult(CamelModel):
    started: bool
    """The child runs again (progress arrives as ``taskProgress`` events; when it ends well its
    change is merged as ``retrace/tasks/apply`` does, or it is ``finished`` if the session was busy)."""


class TaskDiscardResult(CamelModel):
    discarded: bool
