"""MCP tools over the agent: a real MCP server process (tests/fixtures/mcp/files_server.py, the
SDK's FastMCP over stdio) configured in the agent settings, the fake Messages API scripted to
call its tools. Each call is permission-checked as its own class and ends in a checkpoint whose
changes the engine detected (restorable like a shell command's)."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import AnyUrl
from tests.net_support import free_port

from retrace.agent.mcp.config import McpSettings, StdioServer, tool_name
from retrace.agent.mcp.connection import Connection
from retrace.agent.mcp.results import result_text
from retrace.offline.validation import validate_messages

from .conftest import Harness, HarnessFactory

pytestmark = pytest.mark.slow


SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "files_server.py")
WRITE = "mcp__files__write_note"


AUTO = {"write": "auto", "command": "auto", "mcp": "auto"}


def servers(**env: str) -> dict[str, Any]:
    return {"servers": {"files": {"type": "stdio", "command": sys.executable, "args": [SERVER], "env": env}}}


def tool_checkpoints(h: Harness, session_id: str) -> list[Any]:
    return [c for c in h.engine.timeline(session_id) if c.kind == "tool"]


async def test_an_mcp_tool_call_is_offered_run_and_checkpointed(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [
            {"toolCalls": [{"name": "write_file", "input": {"path": "first.txt", "content": "1"}}]},
            {"toolCalls": [{"name": WRITE, "input": {"path": "notes/mcp.txt", "text": "from mcp"}}]},
            {"text": "done"},
        ],
        mcp=servers(),
        permissions=AUTO,
    )
    try:
        sid = await h.turn("write with mcp")
    finally:
        await h.service.mcp.close()
    assert h.stop_reasons() == ["end_turn"]
    assert (h.workspace / "notes/mcp.txt").read_text() == "from mcp"

    # Offered next to the built-in tools, with the server's own input schema.
    tools = {t["name"]: t for t in h.fake.requests[0]["tools"]}
    assert {"read_file", "run_command", WRITE, "mcp__files__shout", "mcp__files__crash"} <= set(tools)
    assert tools[WRITE]["input_schema"]["required"] == ["path", "text"]
    assert "MCP server 'files'" in tools[WRITE]["description"]

    # The call ends in a checkpoint holding the change the engine detected.
    first, call = tool_checkpoints(h, sid)
    assert call.tool == WRITE
    assert [f.path for f in call.files] == ["notes/mcp.txt"]
    assert call.recoverability == "full"
    finished = h.host.of("toolCallFinished")[-1]
    assert (finished.status, finished.changed_paths) == ("ok", ["notes/mcp.txt"])
    assert finished.output == "wrote 8 characters to notes/mcp.txt"
    validate_messages(h.fake.requests[-1]["messages"])

    # Restoring the checkpoint before the call takes its change back.
    h.engine.restore(first.id, mode="code")
    assert not (h.workspace / "notes/mcp.txt").exists()
    assert (h.workspace / "first.txt").read_text() == "1"


async def test_mcp_tools_are_asked_for_as_their_own_class(make_harness: HarnessFactory) -> None:
    write = {"name": WRITE, "input": {"path": "x.txt", "text": "x"}}
    h: Harness = await make_harness(
        [
            {"toolCalls": [write]},
            {"match": {"lastToolResultContains": "permission denied"}, "text": "Understood."},
            {"toolCalls": [write]},
            {"toolCalls": [{"name": WRITE, "input": {"path": "y.txt", "text": "y"}}]},
            {"text": "done"},
        ],
        mcp=servers(),
        permissions={"write": "auto", "command": "auto", "mcp": "ask"},
    )
    try:
        h.host.decisions = ["deny"]
        sid = await h.turn("write x")
        assert not (h.workspace / "x.txt").exists()
        assert h.host.of("toolCallFinished")[0].status == "denied"
        assert tool_checkpoints(h, sid) == []
        (asked,) = h.host.asked
        assert asked.tool == WRITE
        assert '"path": "x.txt"' in asked.review.text  # the user sees the whole input

        h.host.decisions = ["allowAlways"]
        await h.turn("again", sid)
    finally:
        await h.service.mcp.close()
    assert (h.workspace / "x.txt").read_text() == "x"
    assert (h.workspace / "y.txt").read_text() == "y"
    assert len(h.host.asked) == 2  # y.txt was not asked again


async def test_mcp_permission_deny_setting(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [{"toolCalls": [{"name": WRITE, "input": {"path": "x.txt", "text": "x"}}]}, {"text": "ok"}],
        mcp=servers(),
        permissions={"write": "auto", "command": "auto", "mcp": "deny"},
    )
    try:
        await h.turn("write x")
    finally:
        await h.service.mcp.close()
    assert not (h.workspace / "x.txt").exists()
    assert h.host.asked == []
    assert h.host.of("toolCallFinished")[0].status == "denied"


async def test_a_crashing_server_is_a_tool_error_and_is_restarted(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [
            {"toolCalls": [{"name": "mcp__files__crash", "input": {}}]},
            {"match": {"lastToolResultContains": "failed"}, "text": "The server crashed."},
            {"toolCalls": [{"name": "mcp__files__shout", "input": {"text": "back"}}]},
            {"text": "done"},
        ],
        mcp=servers(),
        permissions=AUTO,
    )
    try:
        sid = await h.turn("crash it")
        crashed = h.host.of("toolCallFinished")[0]
        assert crashed.status == "error"
        assert "failed" in crashed.output and "restarts at the next turn" in crashed.output
        assert h.stop_reasons() == ["end_turn"]  # the turn went on
        assert [c.tool for c in tool_checkpoints(h, sid)] == ["mcp__files__crash"]

        await h.turn("again", sid)
    finally:
        await h.service.mcp.close()
    assert h.host.of("toolCallFinished")[-1].output == "BACK"
    assert h.stop_reasons() == ["end_turn", "end_turn"]


async def test_a_server_that_cannot_start_is_reported_once(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([{"text": "one"}, {"text": "two"}], mcp=servers(CRASH_ON_START="1"))
    try:
        sid = await h.turn("hello")
        await h.turn("again", sid)
    finally:
        await h.service.mcp.close()
    assert h.stop_reasons() == ["end_turn", "end_turn"]
    (notice,) = [e for e in h.host.of("error") if "MCP" in e.message]
    assert "MCP server 'files' could not start" in notice.message
    assert "CRASH_ON_START" in notice.message  # the server's last stderr line says why
    assert not any(t["name"].startswith("mcp__") for t in h.fake.requests[0]["tools"])


def test_settings_accept_the_mcp_json_shape_and_names_are_valid() -> None:
    settings = McpSettings.model_validate(
        {
            "servers": {
                "fs": {"command": "npx", "args": ["-y", "server"], "envFile": "ignored"},
                "web": {"type": "streamableHttp", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}},
                "api": {"url": "https://example.test/mcp"},
            }
        }
    )
    assert [s.type for s in settings.servers.values()] == ["stdio", "http", "http"]
    cases = {
        ("fs", "write"): "mcp__fs__write",
        ("my server", "do.it"): None,
        ("s" * 40, "t" * 40): None,
    }
    names = set()
    for (server, tool), expected in cases.items():
        name = tool_name(server, tool)
        assert len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)
        assert expected is None or name == expected
        names.add(name)
    assert len(names) == len(cases)
    assert tool_name("a b", "c") != tool_name("a_b", "c")  # cleaned names never collide


async def wait_listening(port: int, proc: asyncio.subprocess.Process) -> None:
    """Until the server accepts connections (it imports the SDK first: seconds)."""
    while proc.returncode is None:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        return
    raise AssertionError(f"the HTTP MCP server exited with {proc.returncode}")


async def test_a_streamable_http_server(make_harness: HarnessFactory, tmp_path: Path) -> None:
    port = free_port()
    served = tmp_path / "served"
    served.mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, SERVER, "http", str(port), cwd=served, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        await asyncio.wait_for(wait_listening(port, proc), 60)
        h: Harness = await make_harness(
            [
                {"toolCalls": [{"name": "mcp__web__shout", "input": {"text": "over http"}}]},
                {"text": "done"},
            ],
            mcp={"servers": {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}},
            permissions=AUTO,
        )
        try:
            sid = await h.turn("shout")
        finally:
            await h.service.mcp.close()
    finally:
        proc.kill()
        await proc.wait()
    finished = h.host.of("toolCallFinished")
    assert [(e.tool, e.status, e.output) for e in finished] == [("mcp__web__shout", "ok", "OVER HTTP")]
    assert [c.tool for c in tool_checkpoints(h, sid)] == ["mcp__web__shout"]


def test_results_map_every_content_kind_to_capped_text() -> None:
    from mcp import types

    png = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    cases: list[tuple[list[Any], Any, str]] = [
        ([types.TextContent(type="text", text="a"), types.TextContent(type="text", text="b")], None, "a\nb"),
        (
            [types.ImageContent(type="image", data=png, mimeType="image/png")],
            None,
            "[image image/png, 100 bytes: not shown]",
        ),
        (
            [
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(uri=AnyUrl("file:///w/a.txt"), text="body"),
                )
            ],
            None,
            "[resource file:///w/a.txt]\nbody",
        ),
        ([], {"n": 1}, '{\n "n": 1\n}'),
        ([], None, "(no output)"),
    ]
    for content, structured, expected in cases:
        result = types.CallToolResult(content=content, structuredContent=structured)
        assert result_text(result, 30_000) == expected
    long = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 50_000)])
    capped = result_text(long, 2000)
    assert len(capped) < 2200 and "bytes omitted" in capped


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_server_killed_between_turns_is_restarted_and_new_settings_replace_it(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    shout = {"toolCalls": [{"name": "mcp__files__shout", "input": {"text": "hi"}}]}
    pid_file = tmp_path / "server.pid"
    h: Harness = await make_harness(
        [shout, {"text": "one"}, shout, {"text": "two"}],
        mcp=servers(PID_FILE=str(pid_file)),
        permissions=AUTO,
    )
    try:
        sid = await h.turn("first")
        first = int(pid_file.read_text())
        os.kill(first, signal.SIGTERM)
        await h.turn("second", sid)
        second = int(pid_file.read_text())
        assert second != first
        assert [e.output for e in h.host.of("toolCallFinished")] == ["HI", "HI"]

        # New settings for the server: the running process is stopped.
        h.service.update_settings(mcp=servers(PID_FILE=str(pid_file), OTHER="1"))
        await h.service.mcp.close()  # waits for the stopped servers
        assert not pid_alive(second)
    finally:
        await h.service.mcp.close()


async def test_a_chatty_servers_stderr_file_is_kept_small(tmp_path: Path) -> None:
    config = StdioServer(command=sys.executable, args=[SERVER])
    conn = Connection("files", config, tmp_path)
    try:
        await conn.start(60)
        await conn.call("chatter", {"kib": 1100}, 60)  # past the 1 MiB cap
        assert conn.stderr_size() > 1100 * 1024
        assert await conn.check()
        assert conn.stderr_size() < 1024  # emptied (at most the ping's log line since)
        await conn.call("chatter", {"kib": 1}, 60)
        assert 1024 < conn.stderr_size() < 4096  # written at the new end (append mode), no hole
        assert conn.stderr_tail() == "chatter done"
    finally:
        await conn.close()
