"""``task``: hand a self-contained piece of work to a subagent (a child agent).

The child starts with a fresh conversation (the brief below, nothing else of the parent's), the
same model settings and a permission policy no wider than the parent's, in an isolated copy of
the workspace with its own checkpoint timeline. When it finishes, its net change is merged into
this workspace (three-way, against the state it started from) as this call's checkpoint;
conflicts are reported, never resolved silently, and a child that fails changes nothing here.
Several ``task`` calls in one reply run in parallel. The tool result is the child's final answer
(bounded) plus what was merged. The work happens in :mod:`retrace.agent.subagents`, reached
through :attr:`ToolContext.tasks`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec

NAME = "task"


class TaskInput(ToolInput):
    description: str = Field(min_length=1, max_length=200)
    """A short (3-8 words) name for the piece of work, shown to the user."""
    prompt: str = Field(min_length=1)
    """The complete brief for the subagent: it sees nothing else of this conversation, so say
    what to do, where, and what to report back."""
    tools: list[str] | None = None
    """Restrict the subagent to these tools (default: every tool except ``task``)."""


def valid_task_input(raw: dict[str, Any]) -> TaskInput | None:
    """The call's input if it is valid (an invalid one is refused when the call runs)."""
    try:
        return TaskInput.model_validate(raw)
    except ValidationError:
        return None


async def run(args: TaskInput, ctx: ToolContext) -> ToolResult:
    if ctx.tasks is None:
        raise ToolError("subagents are not available to this agent (a subagent cannot start another)")
    return await ctx.tasks.run(ctx.call_id, args)


SPEC = ToolSpec(
    name=NAME,
    description=(
        "Hand a self-contained piece of work to a subagent that runs in an isolated copy of the "
        "workspace with a fresh conversation. Its file changes are merged into this workspace "
        "when it finishes (conflicts are reported, not resolved); its final answer is the "
        "result. Put several task calls in one reply to run them in parallel."
    ),
    category="agent",
    input_model=TaskInput,
    run=run,
)
