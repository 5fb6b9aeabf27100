"""The official MCP SDK's client against the real ``python -m retrace mcp`` subprocess, and a
store seeded the way the hooks record another agent's work (an ``agentSession`` first line, tool
checkpoints stamped with ``meta.agent``), beside the command line's own checkpoints.

The subprocess is a fork of a fork server that has imported what ``retrace mcp`` imports (the MCP
SDK: ~1.3 CPU-seconds a cold start, on every test), speaking over real pipes with the SDK's own
stdio framing (:func:`forked_stdio`); ``RETRACE_TEST_FORK_CLI=0`` starts it cold through the SDK's
``stdio_client``, and ``test_mcp_stdio.py`` starts one cold of its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage, TextContent
from tests import cli_forkserver

from retrace.engine import Engine
from retrace.engine.store.events import AgentSessionEvent

AGENT_SESSION = "claude-code-sess1"


@dataclass(frozen=True)
class Seeded:
    baseline: str
    write: str
    """The Write tool call of claude-code: created ``src/new.py``."""
    edit: str
    """The Edit tool call of claude-code: changed ``src/app.py``."""
    manual: str
    """A manual checkpoint of the command line: ``logo.bin`` (binary) and ``notes.md``."""


def seed(workspace: Path, store: Path) -> Seeded:
    (workspace / "src").mkdir(parents=True, exist_ok=True)
    (workspace / "src" / "app.py").write_text("def answer():\n    return 1\n", "utf-8")
    (workspace / "README.md").write_text("# Sample\n", "utf-8")
    with Engine.open(workspace, store, session_id="cli", create=True) as engine:
        baseline = engine.head.id
        engine.new_session(AGENT_SESSION)
        engine.append_event(
            AgentSessionEvent(agent="claude-code", external_session_id="sess1", cwd=str(workspace)),
            session_id=AGENT_SESSION,
        )
        (workspace / "src" / "new.py").write_text("print('new')\n", "utf-8")
        write = engine.checkpoint(
            label="Write src/new.py",
            changed_paths=["src/new.py"],
            kind="tool",
            tool="Write",
            tool_call_id="toolu_1",
            session_id=AGENT_SESSION,
            meta={"agent": "claude-code"},
        )
        (workspace / "src" / "app.py").write_text("def answer():\n    return 42\n", "utf-8")
        edit = engine.checkpoint(
            label="Edit src/app.py: return 42",
            changed_paths=["src/app.py"],
            kind="tool",
            tool="Edit",
            tool_call_id="toolu_2",
            session_id=AGENT_SESSION,
            meta={"agent": "claude-code"},
        )
        (workspace / "logo.bin").write_bytes(b"\x89PNG\x00\x01\x02binary")
        (workspace / "notes.md").write_text("notes\n", "utf-8")
        manual = engine.checkpoint(label="before refactor", kind="manual", session_id="cli")
    return Seeded(baseline=baseline, write=write.id, edit=edit.id, manual=manual.id)


@dataclass
class Mcp:
    session: ClientSession

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A successful call: its text and its structured content."""
        result = await self.session.call_tool(name, arguments)
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        assert not result.isError, text
        assert result.structuredContent is not None, text
        return text, result.structuredContent

    async def error(self, name: str, arguments: dict[str, Any]) -> str:
        """A call that must fail: its message."""
        result = await self.session.call_tool(name, arguments)
        text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
        assert result.isError, f"{name} unexpectedly succeeded: {text}"
        return text


@asynccontextmanager
async def retrace_mcp(workspace: Path, store: Path, *extra: str) -> AsyncIterator[Mcp]:
    args = ["-m", "retrace", "mcp", "--workspace", str(workspace), "--store", str(store), *extra]
    if cli_forkserver.enabled():
        transport = forked_stdio(args[2:], dict(os.environ))
    else:
        params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
        transport = stdio_client(params)
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Mcp(session)


PRELOAD = ("retrace.cli.main", "retrace.cli.commands", "retrace.cli.mcp", "retrace.mcp_server.server", "mcp")
"""What ``retrace mcp`` imports before it reads its first message."""


@asynccontextmanager
async def forked_stdio(argv: list[str], env: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    """What the SDK's ``stdio_client`` gives (the receive and send streams of JSON-RPC messages,
    one JSON text per line each way), for ``python -m retrace <argv>`` (``argv`` after
    ``retrace``) forked from a fork server.
    On exit, as the SDK does: stdin closed, the process given 2 s to end, then SIGTERM, SIGKILL."""
    forks = cli_forkserver.server(PRELOAD)
    err = Path(tempfile.mkdtemp(prefix="retrace-mcp-")) / "stderr"
    err.touch()
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    try:
        pid = await asyncio.to_thread(
            forks.spawn, cli_forkserver.RUN_MODULE, ["-m", *argv], env=env, stdout=None, stderr=err,
            stdio=(to_server_r, from_server_w),
        )  # fmt: skip
    finally:
        os.close(to_server_r)
        os.close(from_server_w)
    exited = asyncio.ensure_future(asyncio.to_thread(forks.wait, pid))
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    from_server = await anyio.open_file(from_server_r, "rb", buffering=0)
    to_server = await anyio.open_file(to_server_w, "wb", buffering=0)

    async def pump_out() -> None:
        async with read_writer:
            buffer = b""
            while chunk := await from_server.read(65536):
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    try:
                        await read_writer.send(SessionMessage(JSONRPCMessage.model_validate_json(line)))
                    except anyio.BrokenResourceError:
                        return
                    except ValueError as exc:
                        await read_writer.send(exc)

    async def pump_in() -> None:
        async with write_reader:
            async for message in write_reader:
                text = message.message.model_dump_json(by_alias=True, exclude_none=True)
                await to_server.write((text + "\n").encode())

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump_out)
            tasks.start_soon(pump_in)
            try:
                yield read_stream, write_stream
            finally:
                await to_server.aclose()
                for sig in (None, signal.SIGTERM, signal.SIGKILL):
                    if sig is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, sig)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(exited), 2)
                        break
                tasks.cancel_scope.cancel()
    finally:
        await exited
        await from_server.aclose()
        sys.stderr.write(err.read_text("utf-8", "replace"))
        err.unlink()
        err.parent.rmdir()
