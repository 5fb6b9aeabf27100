"""The agent's system prompt: how Retrace works, how to work in it, and the project's instructions.

Deterministic by contract: the text depends only on the workspace path, whether the agent may
start subagents and the project instructions (:mod:`retrace.agent.instructions`), never on a
time, an id or a count, so consecutive requests share it byte for byte and it caches.
"""

from __future__ import annotations

from pathlib import Path

from retrace.agent.conversation import Conversation
from retrace.agent.folders import folders_prompt
from retrace.agent.instructions import project_instructions
from retrace.engine.folders import Folder

_INTRO = """\
You are Retrace, a careful coding agent working in the user's workspace at {workspace}. \
Paths are relative to the workspace root."""

_CHECKPOINTS = """\
# How Retrace works
- Every tool call ends in a checkpoint: the workspace files, the conversation and the editor \
state right after it. The user can restore any checkpoint (the code, the conversation, or both) \
and undo a restore, so a step you take can always be taken back; that is no reason to be careless.
- Changes someone else makes between your tool calls (the user editing, a formatter) are \
recorded as their own checkpoints; never assume a file is as you last saw it after a pause: \
read it again before editing.
- When the conversation was restored, the next prompt says which files changed since that \
point. A conversation can also be summarized (by the user, or automatically when it grows \
long): a summary then stands for the earlier messages."""

_TOOLS = """\
# How to work
- Read before you write: use read_file, list_files and search_text to learn the code.
- For a change to one file, use edit_file (an exact replacement) or write_file (a new file or a \
full rewrite), not shell commands such as sed, echo or cat > file: edits are reviewed as diffs \
and recorded exactly. Use run_command to build, test, run tools and for changes across many \
files a command does better (a codemod, a formatter, git mv).
- Keep changes minimal and in the project's style; do not reformat code you are not changing.
- Run the project's tests or checks when they exist and a change could break them."""

_TASKS = """\
# Subagents (the task tool)
- task hands a self-contained piece of work to a subagent with a fresh conversation in an \
isolated copy of the workspace; its changes are merged back when it ends (conflicts are \
reported, not resolved). Use it for independent pieces that need no back-and-forth: several \
task calls in one reply run in parallel.
- Its prompt is all the subagent knows: say what to do, where, the constraints, and what to \
report back. Do small or tightly coupled work yourself."""

_STYLE = """\
# Replies
Be concise: say what you did and what the user should know (results, risks, next steps) in a \
few sentences; no preamble, no restating the request. Ask when the request is ambiguous and \
a wrong guess would be costly."""


def system_prompt(
    workspace: Path, *, may_delegate: bool, instructions: str, folders: tuple[Folder, ...] = ()
) -> str:
    """The system prompt for an agent in ``workspace`` (``may_delegate``: it has the task tool;
    ``folders``: every folder of a multi-root workspace, listed when there are several)."""
    parts = [_INTRO.format(workspace=workspace), _CHECKPOINTS, _TOOLS]
    if len(folders) > 1:
        parts.append(folders_prompt(folders))
    if may_delegate:
        parts.append(_TASKS)
    parts.append(_STYLE)
    if instructions:
        parts.append(instructions)
    return "\n\n".join(parts)


_PATH_KEYS = ("path",)


def touched_paths(conv: Conversation) -> list[str]:
    """The paths the conversation's tool calls named or changed (sorted, each once)."""
    paths: set[str] = set()
    for record in conv.tool_calls.values():
        for key in _PATH_KEYS:
            value = record.input.get(key)
            if isinstance(value, str) and value:
                paths.add(value)
        paths.update(record.changed_paths)
    return sorted(paths)


def agent_system_prompt(
    workspace: Path, conv: Conversation, *, may_delegate: bool, folders: tuple[Folder, ...] = ()
) -> str:
    """:func:`system_prompt` with the instructions of the workspace and of ``conv``'s touched
    folders, read now."""
    instructions = project_instructions(workspace, touched_paths(conv))
    return system_prompt(workspace, may_delegate=may_delegate, instructions=instructions, folders=folders)
