"""The agent's tools: one module each; this registry builds the Messages API ``tools`` list.

``TOOLS`` holds the built-in tools. Tools that exist only while something provides them (the
tools of MCP servers, :mod:`retrace.agent.mcp`) are passed as ``extra`` to the functions here;
a built-in name always wins over an extra one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from retrace.agent.tools import edit_file, list_files, read_file, run_command, search_text, task, write_file
from retrace.agent.tools.base import ToolCategory, ToolContext, ToolError, ToolResult, ToolSpec, safe_text

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        read_file.SPEC,
        list_files.SPEC,
        search_text.SPEC,
        write_file.SPEC,
        edit_file.SPEC,
        run_command.SPEC,
        task.SPEC,
    )
}


NO_EXTRA: Mapping[str, ToolSpec] = {}


def spec_of(name: str, extra: Mapping[str, ToolSpec] = NO_EXTRA) -> ToolSpec | None:
    """The tool called ``name``: a built-in one, else one of ``extra``."""
    return TOOLS.get(name) or extra.get(name)


def tool_schemas(
    allowed: frozenset[str] | None = None, extra: Mapping[str, ToolSpec] = NO_EXTRA
) -> list[dict[str, Any]]:
    """The ``tools`` list; ``allowed``: only these tools (a subagent's restricted set);
    ``extra``: tools beyond the built-in ones (MCP tools), listed after them."""
    specs = [*TOOLS.values(), *(s for n, s in extra.items() if n not in TOOLS)]
    return [spec.schema() for spec in specs if allowed is None or spec.name in allowed]


__all__ = [
    "TOOLS",
    "ToolCategory",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "execute",
    "spec_of",
    "tool_schemas",
]


async def execute(
    name: str, raw_input: dict[str, Any], ctx: ToolContext, extra: Mapping[str, ToolSpec] = NO_EXTRA
) -> ToolResult:
    """Validate the model's input and run the tool; every failure becomes an error result."""
    spec = spec_of(name, extra)
    if spec is None:
        available = ", ".join([*TOOLS, *(n for n in extra if n not in TOOLS)])
        return ToolResult(f"unknown tool {name!r}; available: {available}", is_error=True)
    try:
        args = spec.input_model.model_validate(raw_input)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}" for err in e.errors()
        )
        return ToolResult(f"invalid input for {name}: {problems}", is_error=True)
    try:
        result = await spec.run(args, ctx)
    except ToolError as e:
        return ToolResult(safe_text(str(e)), is_error=True)
    except OSError as e:  # the file system said no (full disk, read-only, permissions): tell the model
        where = f" ({e.filename})" if e.filename else ""
        return ToolResult(
            safe_text(f"{name} failed: {e.strerror or e}{where}"), is_error=True, changed_paths=None
        )
    result.output = safe_text(result.output)
    return result
