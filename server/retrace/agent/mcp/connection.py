"""One MCP server, reached through the official MCP Python SDK (stdio or streamable HTTP).

The SDK's transports and session are async context managers whose task groups must be entered
and left by one task, so each connection runs in a task of its own (:meth:`Connection._run`):
it starts the server (stdio: a child process in the workspace; HTTP: a client of the URL),
initializes the session, lists the tools, then holds the session until :meth:`close`. Tool
calls are requests sent from the calling task over that session.

Contracts: :meth:`start` returns the server's tools or raises :class:`McpStartError` (one line:
what failed, with the last line the server wrote to stderr); it never waits longer than its
timeout. A stdio server's stderr goes to a temporary file (emptied at a turn once it passes
:data:`ERRLOG_CAP`, where the file can be put in append mode: not on Windows). A call on a
server that died raises (the SDK answers pending requests with "Connection closed") and marks
the connection :attr:`broken`, as does a :meth:`check` (``ping``) that gets no answer;
:meth:`close` stops the server (the stdio transport ends the child's process tree) and never
raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO, cast

from retrace.agent.mcp.config import HttpServer, StdioServer

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0
PING_TIMEOUT_S = 5.0
ERRLOG_CAP = 1 << 20


class McpStartError(Exception):
    """A server could not be started; the message is one line for the user."""


class Connection:
    def __init__(self, name: str, config: StdioServer | HttpServer, workspace: Path) -> None:
        self.name = name
        self.config = config
        self.workspace = workspace
        self.broken = False
        """Set when a call found the server gone: the owner restarts it before its next use."""
        self._session: Any = None
        self._ready: asyncio.Future[list[Any]] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._errlog: TextIO | None = None
        self._trimmable = False

    @property
    def alive(self) -> bool:
        return (
            self._session is not None and not self.broken and self._task is not None and not self._task.done()
        )

    async def start(self, timeout_s: float) -> list[Any]:
        """Start the server; its tools (``mcp.types.Tool``)."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._task = asyncio.create_task(self._run(), name=f"retrace-mcp-{self.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), timeout_s)
        except TimeoutError:
            why = f"did not start within {timeout_s:g} s"
            tail = self.stderr_tail()
            await self.close()
            raise McpStartError(f"{why} (stderr: {tail})" if tail else why) from None
        except Exception as e:
            why = str(e) if isinstance(e, McpStartError) else self._describe(e)
            await self.close()
            raise McpStartError(why) from e

    async def _run(self) -> None:
        assert self._ready is not None
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._open(stack)
                from mcp import ClientSession

                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools = await _all_tools(session)
                self._session = session
                self._ready.set_result(tools)
                await self._stop.wait()
        except BaseException as e:
            if not self._ready.done():
                self._ready.set_exception(
                    e if isinstance(e, Exception) else McpStartError("stopped while starting")
                )
            elif not isinstance(e, asyncio.CancelledError):
                log.info("MCP server %r ended: %s", self.name, self._describe(e))
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    async def _open(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        if isinstance(self.config, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cwd = self.workspace / self.config.cwd if self.config.cwd else self.workspace
            if self._errlog is None:  # kept until close(): a failed start reports its last line
                errlog = tempfile.TemporaryFile("a+", encoding="utf-8", errors="replace")  # noqa: SIM115
                self._errlog = cast(TextIO, errlog)  # closed by close()
                self._trimmable = _append_only(errlog.fileno())
            params = StdioServerParameters(
                command=self.config.command, args=self.config.args, env=self.config.env or None, cwd=cwd
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=self._errlog))
            return read, write
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = await stack.enter_async_context(create_mcp_http_client(headers=self.config.headers))
        read, write, _ = await stack.enter_async_context(
            streamable_http_client(self.config.url, http_client=client)
        )
        return read, write

    async def check(self, timeout_s: float = PING_TIMEOUT_S) -> bool:
        """Whether the server still answers (a ``ping``); a server that does not is :attr:`broken`."""
        session = self._session
        if session is None or not self.alive:
            return False
        self._trim_errlog()
        try:
            await asyncio.wait_for(session.send_ping(), timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.broken = True
            return False
        return True

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """``tools/call``; the ``mcp.types.CallToolResult``. Raises :class:`TimeoutError` when the
        server does not answer in time, anything else when the server is gone (then
        :attr:`broken`)."""
        from mcp.shared.exceptions import McpError

        session = self._session
        if session is None:
            self.broken = True
            raise McpStartError("the server is not running")
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=timeout_s))
        except McpError as e:
            if "timed out" in str(e).lower():
                raise TimeoutError(str(e)) from e
            if e.error.code == -32000 or not self.alive:  # CONNECTION_CLOSED
                self.broken = True
            raise
        except asyncio.CancelledError:
            raise
        except Exception:
            self.broken = True
            raise

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_WAIT_S)
            except BaseException:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._errlog is not None:
            self._errlog.close()

    def _describe(self, error: BaseException) -> str:
        """One line: the error, and the last thing the server wrote to stderr."""
        first = innermost(error)
        text = str(first).strip().splitlines()
        line = f"{type(first).__name__}: {text[0] if text else ''}".strip().rstrip(":")
        tail = self.stderr_tail()
        return f"{line} (stderr: {tail})" if tail else line

    def _trim_errlog(self) -> None:
        """Empty the stderr file of a running server past :data:`ERRLOG_CAP` bytes (a chatty
        server must not fill the disk; only its last lines matter)."""
        errlog = self._errlog
        with contextlib.suppress(OSError, ValueError):
            if (
                self._trimmable
                and errlog is not None
                and not errlog.closed
                and errlog.seek(0, 2) > ERRLOG_CAP
            ):
                errlog.truncate(0)

    def stderr_size(self) -> int:
        """Bytes in the stderr file now (0 without one)."""
        errlog = self._errlog
        with contextlib.suppress(OSError, ValueError):
            if errlog is not None and not errlog.closed:
                return os.fstat(errlog.fileno()).st_size
        return 0

    def stderr_tail(self) -> str:
        errlog = self._errlog
        if errlog is None or errlog.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            errlog.flush()
            errlog.seek(0)
            lines = [line.strip() for line in errlog.read()[-4000:].splitlines() if line.strip()]
            return lines[-1][:300] if lines else ""
        return ""


async def _all_tools(session: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    while True:
        from mcp import types

        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            return tools


def _append_only(fd: int) -> bool:
    """Put ``fd`` in append mode (the child then writes at the end, wherever that is after a
    trim); whether that was possible (not on Windows: its file is not trimmed)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    except OSError:
        return False
    return True


def innermost(error: BaseException) -> BaseException:
    """The first leaf of nested exception groups (the SDK's task groups wrap what failed)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
