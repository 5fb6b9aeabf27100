"""The real ``retrace hook <agent>`` (a subprocess fed the documented hook JSON) while a real
server (``python -m retrace serve`` through the editor stand-in) holds the store: the server
applies each event through its engine gate and tells the editor (``turnStarted``,
``checkpointCreated`` + ``timeline/didChange``, ``turnFinished``); a refusal is logged, never an
exit code; a server that dies mid-call does not lose the event."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.app.hook_samples import SESSION, claude, claude_tool, gemini, gemini_tool
from tests.cli import cli_support
from tests.lsp.lsp_support import (
    AUTO,
    EditorClient,
    fake_model,
    model_env,
    start_editor,
    stop_editor,
    wait_until,
)
from tests.workspaces import project

from retrace.app.hooks.model import session_id_for
from retrace.relay import wire

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")
SID = session_id_for("claude-code", SESSION)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "project", {"src/app.py": "print('hi')\n", "old.txt": "old\n"})


@pytest.fixture
async def editor(relay_dir: Path, workspace: Path, store: Path) -> AsyncIterator[EditorClient]:
    model = fake_model("session")
    client = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    await wait_until(lambda: wire.socket_path(store).exists())
    yield client
    if not client.client.stopped:
        await stop_editor(client)
    model.stop()


def hook(workspace: Path, store: Path, agent: str, payload: bytes | dict[str, Any]) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    cmd = [str(RETRACE), "hook", agent, "--workspace", str(workspace), "--store", str(store)]
    env = {k: v for k, v in os.environ.items() if k not in ("RETRACE_STORE", "CLAUDE_PROJECT_DIR")}
    proc = cli_support.run_bytes(cmd, env, input=data, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr
    assert b"Traceback" not in proc.stderr, proc.stderr


async def ahook(workspace: Path, store: Path, agent: str, payload: bytes | dict[str, Any]) -> None:
    await asyncio.to_thread(hook, workspace, store, agent, payload)


def log_of(workspace: Path, store: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(RETRACE), "log", "--json", "--workspace", str(workspace), "--store", str(store)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)
    assert isinstance(entries, list)
    return entries


def changed(cp: dict[str, Any]) -> set[str]:
    return {f["path"] for f in cp["files"]} | {f["oldPath"] for f in cp["files"] if f.get("oldPath")}


def hook_log(store: Path) -> str:
    path = store / "logs" / "hooks.log"
    return path.read_text("utf-8") if path.exists() else ""


async def test_a_claude_session_through_the_running_server(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    ws, cwd = workspace, str(workspace)
    await editor.request("retrace/timeline/tree", {})  # the timeline is built: hook rows are appended live
    await ahook(ws, store, "claude-code", claude("UserPromptSubmit", cwd, prompt="Tidy up"))
    started = await editor.wait_for_event(lambda e: e["kind"] == "turnStarted" and e["sessionId"] == SID)
    assert started["text"] == "Tidy up"
    turn = started["turnId"]

    await ahook(
        ws,
        store,
        "claude-code",
        claude_tool("PreToolUse", cwd, "Edit", {"file_path": f"{cwd}/src/app.py"}, "tu_e"),
    )
    (ws / "src" / "app.py").write_text("print('hello')\n", "utf-8")
    edit_input = {"file_path": f"{cwd}/src/app.py", "old_string": "hi", "new_string": "hello"}
    await ahook(ws, store, "claude-code", claude_tool("PostToolUse", cwd, "Edit", edit_input, "tu_e"))
    (ws / "user.txt").write_text("typed by the user meanwhile\n", "utf-8")
    cmd = "touch made.txt && rm old.txt && mv src/app.py src/main.py"
    await ahook(ws, store, "claude-code", claude_tool("PreToolUse", cwd, "Bash", {"command": cmd}, "tu_b"))
    (ws / "made.txt").write_text("", "utf-8")
    (ws / "old.txt").unlink()
    (ws / "src" / "app.py").rename(ws / "src" / "main.py")
    await ahook(ws, store, "claude-code", claude_tool("PostToolUse", cwd, "Bash", {"command": cmd}, "tu_b"))
    await ahook(
        ws,
        store,
        "claude-code",
        claude_tool("PostToolUse", cwd, "Read", {"file_path": f"{cwd}/made.txt"}, "tu_r"),
    )
    await ahook(ws, store, "claude-code", claude("Stop", cwd, stop_hook_active=False))
    finished = await editor.wait_for_event(lambda e: e["kind"] == "turnFinished" and e["sessionId"] == SID)
    assert (finished["turnId"], finished["stopReason"]) == (turn, "end_turn")

    made = [
        e["checkpoint"] for e in editor.events if e["kind"] == "checkpointCreated" and e["sessionId"] == SID
    ]
    assert [(c["kind"], c["tool"]) for c in made] == [
        ("tool", "Edit"), ("external", None), ("tool", "Bash"), ("tool", "Read"),
    ]  # fmt: skip
    await wait_until(
        lambda: (
            {c["id"] for c in made}
            <= {(t.get("checkpoint") or {}).get("id") for t in editor.timeline_changes}
        )
    )
    assert hook_log(store) == ""
    tree = await editor.request("retrace/timeline/tree", {})
    assert SID in json.dumps(tree)  # the external session is in the timeline the editor shows
    await stop_editor(editor)

    mine = {e["id"]: e for e in log_of(ws, store) if e["sessionId"] == SID}
    assert list(mine) == [c["id"] for c in made]  # recorded once each, in this order
    edit, external, bash, read = mine.values()
    assert changed(edit) == {"src/app.py"} and edit["label"] == "src/app.py"
    assert changed(external) == {"user.txt"}
    assert changed(bash) == {"made.txt", "old.txt", "src/app.py", "src/main.py"} and bash["label"] == cmd
    assert changed(read) == set()
    for cp, use_id in ((edit, "tu_e"), (bash, "tu_b"), (read, "tu_r")):
        assert (cp["meta"], cp["toolCallId"], cp["turnId"]) == ({"agent": "claude-code"}, use_id, turn)


async def test_gemini_events_and_bad_input_with_a_server(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    ws, cwd = workspace, str(workspace)
    await ahook(ws, store, "gemini-cli", gemini("BeforeAgent", cwd, prompt="docs"))
    (ws / "DOCS.md").write_text("# d\n", "utf-8")
    await ahook(
        ws, store, "gemini-cli", gemini_tool("AfterTool", cwd, "write_file", {"file_path": f"{cwd}/DOCS.md"})
    )
    gsid = session_id_for("gemini-cli", "g-" + SESSION)
    cp = await editor.wait_for_event(lambda e: e["kind"] == "checkpointCreated" and e["sessionId"] == gsid)
    assert changed(cp["checkpoint"]) == {"DOCS.md"}

    # Refusals are logged, never an exit code, and the server keeps serving.
    await ahook(ws, store, "gemini-cli", {"hook_event_name": "AfterTool", "session_id": "s"})
    await ahook(ws, store, "claude-code", claude("UserPromptSubmit", str(ws.parent), prompt="p"))
    await ahook(ws, store, "cursor", claude("Stop", cwd))
    await ahook(ws, store, "claude-code", b"\x00not json")
    text = hook_log(store)
    assert "refused by the Retrace server: the hook event has no tool_name" in text
    assert "not inside the workspace" in text
    assert "unknown agent 'cursor'" in text
    assert "is not JSON" in text
    path = wire.socket_path(store)
    bad = wire.encode(
        {"v": 1, "method": "hook", "store": str(store), "params": {"agent": "Bad Name", "event": {}}}
    )
    answer = await asyncio.to_thread(_raw, path, bad)
    assert answer["code"] == wire.INVALID_PARAMS
    (ws / "after.txt").write_text("a\n", "utf-8")
    await ahook(
        ws,
        store,
        "gemini-cli",
        gemini_tool("AfterTool", cwd, "write_file", {"file_path": f"{cwd}/after.txt"}),
    )
    await editor.wait_for_event(
        lambda e: e["kind"] == "checkpointCreated" and changed(e["checkpoint"]) == {"after.txt"}
    )


def _raw(path: Path, payload: bytes) -> dict[str, Any]:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(60)
        conn.connect(str(path))
        conn.sendall(payload)
        answer = json.loads(wire.read_line(conn))
    assert isinstance(answer, dict)
    return answer


DYING_SERVER = """
import os, sys, time
from pathlib import Path
from retrace.relay.server import RelayServer
def die(request):
    os._exit(9)  # killed mid-call: the connection breaks with no answer
relay = RelayServer(Path(sys.argv[1]), {"hook": die})
relay.start()
print("ready", flush=True)
time.sleep(120)
"""


def test_a_server_killed_mid_call_loses_nothing(relay_dir: Path, workspace: Path, store: Path) -> None:
    cwd = str(workspace)
    hook(
        workspace, store, "claude-code", claude("UserPromptSubmit", cwd, prompt="p")
    )  # cold: creates the store
    dying = subprocess.Popen(
        [sys.executable, "-c", DYING_SERVER, str(store)], stdout=subprocess.PIPE, env=dict(os.environ)
    )
    try:
        assert dying.stdout is not None and dying.stdout.readline().strip() == b"ready"
        (workspace / "x.txt").write_text("x\n", "utf-8")
        hook(
            workspace,
            store,
            "claude-code",
            claude_tool("PostToolUse", cwd, "Write", {"file_path": "x.txt"}, "t1"),
        )
        assert dying.wait(30) == 9  # the "server" did die in the call
    finally:
        if dying.poll() is None:
            dying.kill()
            dying.wait()
    assert "did not take the event" in hook_log(store)
    (cp,) = [e for e in log_of(workspace, store) if e["sessionId"] == SID]
    assert (cp["tool"], changed(cp)) == ("Write", {"x.txt"})
