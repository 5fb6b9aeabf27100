"""The MCP server over stdio (the official ``mcp`` SDK's low-level server).

``tools/list`` answers the table of :mod:`retrace.mcp_server.tools` with each input's JSON
schema (bounds included) and output schema. ``tools/call`` validates the arguments with the
tool's pydantic model (strict; one line naming each bad field), runs the tool in a worker thread
— one call at a time: this process holds at most one engine — and answers the text and the
structured content. Every refusal (bad arguments, unknown id, a path outside the workspace, a
conflict, a store another workspace owns) is a tool error (``isError``) with its message; an
unexpected exception is logged with its traceback on stderr and answered the same way. Nothing
is ever written to stdout but the protocol.

The SDK is imported when the server is built, not with this module (as ``agent/mcp`` does): on
Windows its stdio transport needs pywin32, which only a real Windows install has.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from retrace import __version__
from retrace.camel import dump
from retrace.engine.errors import RetraceError
from retrace.mcp_server.access import McpToolError, StoreAccess
from retrace.mcp_server.tools import TOOLS, Tool

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.lowlevel import Server

log = logging.getLogger(__name__)

NAME = "retrace"
INSTRUCTIONS = (
    "Retrace checkpoints this workspace after every agent tool call. List checkpoints, show what one "
    "changed, record a named one, and restore files to one (a dry run unless confirm is true)."
)


def invalid(tool: str, exc: ValidationError) -> str:
    """One line naming every bad argument (its camelCase name) and why."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        given = error.get("input")
        shown = repr(given) if isinstance(given, str | int | float | bool) else ""
        got = f" (got {shown})" if shown and len(shown) <= 60 and error["type"] != "missing" else ""
        problems.append(f"{where}: {error['msg']}{got}")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def describe(tool: Tool) -> types.Tool:
    from mcp import types

    return types.Tool(
        name=tool.name,
        description=tool.description,
        inputSchema=tool.params.model_json_schema(by_alias=True),
        outputSchema=tool.result.model_json_schema(by_alias=True, mode="serialization"),
        annotations=types.ToolAnnotations(
            readOnlyHint=tool.read_only,
            destructiveHint=tool.name == "restore_checkpoint",
            idempotentHint=tool.read_only,
            openWorldHint=False,
        ),
    )


class Dispatcher:
    """Runs the calls of one MCP session against one store."""

    def __init__(self, access: StoreAccess) -> None:
        self.access = access
        self.lock = anyio.Lock()

    async def call(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[list[types.TextContent], dict[str, Any]]:
        from mcp import types

        tool = TOOLS.get(name)
        if tool is None:
            raise McpToolError(f"unknown tool {name!r} (known: {', '.join(TOOLS)})")
        try:
            params = tool.params.model_validate(arguments)
        except ValidationError as exc:
            raise McpToolError(invalid(name, exc)) from None
        async with self.lock:
            try:
                text, result = await anyio.to_thread.run_sync(tool.run, self.access, params)
            except (RetraceError, OSError):
                raise
            except Exception:
                log.exception("retrace mcp: %s failed", name)
                raise
        return [types.TextContent(type="text", text=text)], dump(result)


def build(access: StoreAccess) -> Server[Any, Any]:
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server(NAME, version=__version__, instructions=INSTRUCTIONS)
    dispatcher = Dispatcher(access)
    listed = [describe(tool) for tool in TOOLS.values()]

    # The SDK reads these handlers' annotations at run time: only names this module has (Any).
    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[Any]:
        return listed

    # The arguments are validated by each tool's model (clearer messages than the schema's).
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        return await dispatcher.call(name, arguments)

    return server


async def serve(access: StoreAccess) -> None:
    from mcp.server.stdio import stdio_server

    server = build(access)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
