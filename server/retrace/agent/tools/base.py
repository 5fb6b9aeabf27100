"""What every tool is: a pydantic input model (its JSON Schema goes to the model), a category for
the permission policy, and an async ``run`` that returns a :class:`ToolResult`.

A tool reports failure the model should see (file missing, ambiguous edit, non-zero exit) as a
result with ``is_error``; it raises :class:`ToolError` for the same purpose from deep inside.
``changed_paths`` lists the workspace-relative paths a tool wrote (capture exactly those);
``None`` means "unknown" (a shell command): the engine then detects every change.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from retrace.agent.processes import Identity
from retrace.agent.terminal import TerminalSession
from retrace.engine.config import EngineConfig
from retrace.engine.folders import Folder

ToolCategory = Literal["read", "write", "command", "agent", "mcp"]
"""``agent``: the ``task`` tool; it runs no action itself (its child's tools are each asked for
under the same policy), so the policy lets it start. ``mcp``: a tool of an MCP server
(:mod:`retrace.agent.mcp`), its own permission class."""


class ToolInput(BaseModel):
    """Base of tool inputs: the names the model uses (snake_case), no unknown fields."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class OpenInput(ToolInput):
    """The input of a tool whose schema is not ours (an MCP tool's): any fields, passed through
    (``model_extra``); the tool's own server validates them."""

    model_config = ConfigDict(extra="allow")


class ToolError(Exception):
    """A one-line failure to report to the model as an error result."""


class TaskRunner(Protocol):
    """Runs the ``task`` tool's child agent (supplied by the agent loop; tools cannot reach it)."""

    async def run(self, call_id: str, args: Any) -> ToolResult:
        """Run (or wait for, when started ahead) the child of tool call ``call_id``, merge its
        net change into the workspace, and report it as the call's result."""


class BackgroundLauncher(Protocol):
    """Where ``run_command`` hands a background command (the agent's background task registry,
    bound to the calling session)."""

    def identity(self) -> tuple[str, dict[str, str]]:
        """A new task identity and the environment entries that carry it into the command."""
        ...

    async def adopt(
        self, command: str, proc: asyncio.subprocess.Process, token: str, make_buffer: Callable[[], Any]
    ) -> tuple[str, int]:
        """Take over the spawned command; its (handle, pid)."""
        ...

    async def track(self, identity: Identity, command: str) -> None:
        """A foreground command is running: record it, so a server that dies meanwhile has its
        processes ended by the next one."""
        ...

    async def untrack(self, identity: Identity) -> None:
        """The foreground command ended (with everything it started)."""
        ...


@dataclass(frozen=True)
class ToolContext:
    workspace: Path
    engine_config: EngineConfig
    dirty_paths: frozenset[str] = frozenset()
    """Workspace-relative paths with unsaved editor changes: writes refuse them."""
    command_timeout_s: float = 120.0
    output_cap_bytes: int = 30_000
    call_id: str = ""
    """The tool call being run (the ``task`` tool keys its child by it)."""
    tasks: TaskRunner | None = None
    """Where ``task`` runs its child; ``None`` for an agent that may not start subagents."""
    terminal: TerminalSession | None = None
    """The session's persistent shell state (``run_command`` reads and updates it); ``None``:
    every command starts at the workspace root with the base environment."""
    background: BackgroundLauncher | None = None
    """Where background commands go (``None``: this caller runs none, e.g. a headless tool test)."""
    folders: tuple[Folder, ...] = ()
    """Every folder of a multi-root workspace, ``workspace`` first (``()``/one: a single folder);
    the file tools reach them all (:mod:`retrace.agent.folders`)."""
    folder_dirty: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The other folders' unsaved editor paths, by root (writes refuse them, as ``dirty_paths``)."""


@dataclass
class ToolResult:
    output: str
    is_error: bool = False
    changed_paths: list[str] | None = field(default_factory=list)
    meta: dict[str, Any] | None = None
    """Stamped on the call's checkpoint (``meta``), e.g. the ``task`` tool's child."""
    folder_paths: dict[str, list[str]] | None = None
    """Paths written in other folders of a multi-root workspace, by root (each folder's own
    checkpoint records them; ``changed_paths`` holds the first folder's)."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    category: ToolCategory
    input_model: type[ToolInput]
    run: Callable[[Any, ToolContext], Awaitable[ToolResult]]
    input_schema: dict[str, Any] | None = None
    """The JSON Schema the model sees when it is not ``input_model``'s (an MCP tool's own)."""

    def schema(self) -> dict[str, Any]:
        """The entry of the Messages API ``tools`` list."""
        if self.input_schema is not None:
            return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": input_schema_of(self.input_model),
        }

    def summary(self, raw_input: dict[str, Any]) -> str:
        """One line for permission prompts and logs, e.g. ``run_command: npm test``."""
        key = next((k for k in ("command", "path", "pattern", "description") if k in raw_input), None)
        detail = str(raw_input[key]) if key else ""
        detail = detail.replace("\n", " ")
        return f"{self.name}: {detail[:200]}" if detail else self.name


def input_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a tool's input model as the model sees it (no title or description:
    those are the tool's own). Every request lists every tool, and pydantic builds a schema
    anew on each call (~6 ms for the built-in tools, on every request; 0.3 ms copied): it is
    built once per model; each caller gets its own copy to change as it likes."""
    return copy.deepcopy(_input_schema(model))


@functools.cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


def safe_text(text: str) -> str:
    """``text`` as valid UTF-8: file names that are not UTF-8 (decoded by Python with lone
    surrogates) are shown with ``\\xNN`` escapes, since the model, the journal and the editor can
    only carry valid text."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cap_text(text: str, cap_bytes: int) -> str:
    """``text`` cut to about ``cap_bytes`` UTF-8 bytes, keeping head and tail, saying what was cut."""
    text = safe_text(text)
    data = text.encode("utf-8")
    if len(data) <= cap_bytes:
        return text
    half = max(cap_bytes // 2, 1)
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    cut = len(data) - 2 * half
    return f"{head}\n[... {cut} bytes omitted (output capped at {cap_bytes} bytes) ...]\n{tail}"
