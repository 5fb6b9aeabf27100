"""The MCP servers of one agent service, and their tools as :class:`ToolSpec` entries.

Lifecycle: nothing starts until a turn asks for the tools (:meth:`McpTools.specs`, at the start
of every turn). Then every configured server not running is started, all at once, each waiting
at most ``startTimeoutSeconds``; a server that fails to start is reported once (log and the
``notice`` callback, which the service turns into a chat notice) and not tried again until its
settings change, so it never holds up a turn twice. A server that died (a call found it gone,
or it does not answer the ``ping`` every running server gets at the start of a turn) is
restarted then. :meth:`configure` applies new settings (servers whose entry
changed or went away are stopped); :meth:`close` stops every server.

A tool call (category ``mcp``) returns its text with ``changed_paths=None``: what the server
changed in the workspace is unknown, so the engine detects every change for the call's
checkpoint, exactly as after a shell command. A call on a server that is gone, a timeout and a
server error are error results the model sees; the turn goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from retrace.agent.mcp.config import HttpServer, McpSettings, StdioServer, tool_name
from retrace.agent.mcp.connection import Connection, McpStartError, innermost
from retrace.agent.mcp.results import result_text
from retrace.agent.tools.base import OpenInput, ToolContext, ToolError, ToolResult, ToolSpec

log = logging.getLogger(__name__)

Notice = Callable[[str], Awaitable[None]]
MAX_DESCRIPTION = 4000


class McpTools:
    def __init__(self, workspace: Path, settings: McpSettings | None = None) -> None:
        self.workspace = workspace
        self.settings = settings or McpSettings()
        self._connections: dict[str, Connection] = {}
        self._specs: dict[str, dict[str, ToolSpec]] = {}
        self._failed: dict[str, StdioServer | HttpServer] = {}
        """Servers whose start failed, with the settings it failed with (not retried with them)."""
        self._lock = asyncio.Lock()
        self._retired: set[asyncio.Task[None]] = set()

    def configure(self, settings: McpSettings) -> None:
        """New settings; servers whose entry changed or went away are stopped (in the
        background), the others keep running."""
        self.settings = settings
        for name in list(self._connections):
            if settings.servers.get(name) != self._connections[name].config:
                self._retire(name)
        for name in list(self._failed):
            if settings.servers.get(name) != self._failed[name]:
                del self._failed[name]

    def _retire(self, name: str) -> None:
        conn = self._connections.pop(name)
        self._specs.pop(name, None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # settings replaced outside the event loop: no server can run there
            return
        task = loop.create_task(conn.close())
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    async def specs(self, notice: Notice | None = None) -> Mapping[str, ToolSpec]:
        """The tools of every server that runs, starting those that do not (see the module)."""
        if not self.settings.servers:
            return {}
        async with self._lock:
            conns = list(self._connections.items())
            answers = await asyncio.gather(*(conn.check() for _, conn in conns))
            for (name, _), answered in zip(conns, answers, strict=True):
                if not answered:
                    log.info("MCP server %r is not running; restarting it", name)
                    self._retire(name)
            todo = [
                (name, config)
                for name, config in self.settings.servers.items()
                if name not in self._connections and self._failed.get(name) != config
            ]
            await asyncio.gather(*(self._start(name, config, notice) for name, config in todo))
            return {tool: spec for specs in self._specs.values() for tool, spec in specs.items()}

    async def _start(self, name: str, config: StdioServer | HttpServer, notice: Notice | None) -> None:
        conn = Connection(name, config, self.workspace)
        try:
            tools = await conn.start(self.settings.start_timeout_seconds)
        except McpStartError as e:
            self._failed[name] = config
            message = f"MCP server {name!r} could not start: {e}; its tools are not available"
            log.warning("%s", message)
            if notice is not None:
                await notice(message)
            return
        self._connections[name] = conn
        self._specs[name] = {spec.name: spec for spec in (self._spec(name, tool) for tool in tools)}
        log.info("MCP server %r started: %d tool(s)", name, len(tools))

    def _spec(self, server: str, tool: Any) -> ToolSpec:
        schema = dict(tool.inputSchema or {})
        if schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
        description = (tool.description or tool.title or tool.name).strip()
        description = f"{description[:MAX_DESCRIPTION]} (tool {tool.name!r} of MCP server {server!r})"
        original = str(tool.name)

        async def run(args: OpenInput, ctx: ToolContext) -> ToolResult:
            return await self.call(server, original, dict(args.model_extra or {}), ctx)

        return ToolSpec(
            name=tool_name(server, original),
            description=description,
            category="mcp",
            input_model=OpenInput,
            run=run,
            input_schema=schema,
        )

    async def call(self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run one tool; every outcome is a result (see the module)."""
        conn = self._connections.get(server)
        if conn is None or not conn.alive:
            raise ToolError(
                f"MCP server {server!r} is not running; nothing was run (it restarts at the next turn)"
            )
        timeout = self.settings.call_timeout_seconds
        try:
            result = await conn.call(tool, arguments, timeout)
        except TimeoutError:
            why = f"MCP tool {tool!r} of server {server!r} did not answer within {timeout:g} s"
            return ToolResult(why, is_error=True, changed_paths=None)
        except Exception as e:  # the server failed or went away mid-call
            gone = " (the server stopped; it restarts at the next turn)" if conn.broken else ""
            why = f"MCP tool {tool!r} of server {server!r} failed: {_one_line(e)}{gone}"
            return ToolResult(why, is_error=True, changed_paths=None)
        return ToolResult(
            result_text(result, ctx.output_cap_bytes), is_error=bool(result.isError), changed_paths=None
        )

    async def close(self) -> None:
        """Stop every server (and wait for those being stopped)."""
        for name in list(self._connections):
            self._retire(name)
        if self._retired:
            await asyncio.gather(*list(self._retired), return_exceptions=True)


def _one_line(error: BaseException) -> str:
    first = innermost(error)
    lines = str(first).strip().splitlines()
    return f"{lines[0] if lines else type(first).__name__}"[:300]
