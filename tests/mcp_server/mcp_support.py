"""The official MCP SDK's client against the real ``python -m retrace mcp`` subprocess, and a
store seeded the way the hooks record another agent's work (an ``agentSession`` first line, tool
checkpoints stamped with ``meta.agent``), beside the command line's own checkpoints."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

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
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrace", "mcp", "--workspace", str(workspace), "--store", str(store), *extra],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Mcp(session)
