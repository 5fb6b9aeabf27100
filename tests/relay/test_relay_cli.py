"""The real ``retrace checkpoint`` (a subprocess) while a real server (``python -m retrace
serve``, through the editor stand-in of ``tests/lsp``) holds the store: the checkpoint is made by
that server through the relay socket, recorded once, shown in the editor; a killed server's
stale socket does not block the command line; no relay means today's lock error; command-line
checkpoints during an agent turn are serialised with the agent's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.lsp.lsp_support import (
    APP_PY,
    AUTO,
    EditorClient,
    fake_model,
    model_env,
    start_editor,
    stop_editor,
    wait_until,
)
from tests.workspaces import project

from retrace.offline import FakeModel
from retrace.relay import wire

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "work space", {"README.md": "# Sample\n", "src/app.py": APP_PY})


@pytest.fixture
def model() -> Iterator[FakeModel]:
    m = fake_model("session")
    yield m
    m.stop()


@pytest.fixture
async def editor(
    relay_dir: Path, workspace: Path, store: Path, model: FakeModel
) -> AsyncIterator[EditorClient]:
    client = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    await wait_for_relay(store)
    yield client
    if not client.client.stopped:  # a test may have stopped it to read the store
        await stop_editor(client)


async def wait_for_relay(store: Path) -> None:
    await wait_until(lambda: wire.socket_path(store).exists())


def cli(workspace: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(workspace), "--store", str(store)]
    env = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}
    proc = cli_support.run(cmd, env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


async def acli(workspace: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(cli, workspace, store, *args)


def raw(path: Path, payload: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(60)
        conn.connect(str(path))
        conn.sendall(payload)
        answer = json.loads(wire.read_line(conn))
    assert isinstance(answer, dict)
    return answer


def log_of(workspace: Path, store: Path) -> list[dict[str, Any]]:
    proc = cli(workspace, store, "log", "--json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)
    assert isinstance(entries, list)
    return entries


def changed(cp: dict[str, Any]) -> set[str]:
    return {f["path"] for f in cp["files"]}


async def test_checkpoint_goes_through_the_running_server_once(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    (workspace / "src" / "app.py").write_text("changed by another agent\n", "utf-8")
    proc = await acli(workspace, store, "checkpoint", "--label", "hook: edit", "--json")
    assert proc.returncode == 0, proc.stderr
    cp = json.loads(proc.stdout)
    assert cp["kind"] == "manual"
    assert cp["sessionId"] == "cli"
    assert cp["label"] == "hook: edit"
    assert changed(cp) == {"src/app.py"}
    # The editor was told, as for any checkpoint.
    await wait_until(
        lambda: any((c.get("checkpoint") or {}).get("id") == cp["id"] for c in editor.timeline_changes)
    )
    (workspace / "README.md").write_text("# Sample, again\n", "utf-8")
    plain = await acli(workspace, store, "checkpoint")
    assert plain.returncode == 0, plain.stderr
    second = plain.stdout.strip()
    assert len(second) == 12
    await stop_editor(editor)

    entries = log_of(workspace, store)
    ids = [e["id"] for e in entries]
    assert ids.count(cp["id"]) == 1
    assert ids.count(second) == 1
    by_id = {e["id"]: e for e in entries}
    assert by_id[second]["parent"] == cp["id"]
    assert changed(by_id[second]) == {"README.md"}


async def test_paths_are_recorded_exactly_and_bad_input_is_refused_clearly(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    (workspace / "a.txt").write_text("a\n", "utf-8")
    (workspace / "b.txt").write_text("b\n", "utf-8")
    proc = await acli(workspace, store, "checkpoint", "--path", "a.txt", "--json")
    assert proc.returncode == 0, proc.stderr
    assert changed(json.loads(proc.stdout)) == {"a.txt"}

    # Garbage, an unknown method and bad params on the real server's socket: clear errors.
    path = wire.socket_path(store)
    assert (await asyncio.to_thread(raw, path, b"not json\n"))["code"] == wire.INVALID_REQUEST
    unknown = wire.encode({"v": 1, "method": "nope", "store": str(store), "params": {}})
    assert "known: checkpoint" in (await asyncio.to_thread(raw, path, unknown))["error"]
    bad = wire.encode({"v": 1, "method": "checkpoint", "store": str(store), "params": {"paths": "a.txt"}})
    answer = await asyncio.to_thread(raw, path, bad)
    assert answer["code"] == wire.INVALID_PARAMS
    assert "paths" in answer["error"]
    kind = wire.encode({"v": 1, "method": "checkpoint", "store": str(store), "params": {"kind": "tool"}})
    assert (await asyncio.to_thread(raw, path, kind))["code"] == wire.INVALID_PARAMS

    outside = await acli(workspace, store, "checkpoint", "--path", "../escape.txt")
    assert outside.returncode == 1
    assert outside.stderr.startswith("retrace: error: ")
    assert "escape.txt" in outside.stderr
    # The server keeps serving, and nothing was lost: b.txt is still to be recorded.
    proc = await acli(workspace, store, "checkpoint", "--json")
    assert proc.returncode == 0, proc.stderr
    assert changed(json.loads(proc.stdout)) == {"b.txt"}


async def test_another_workspace_with_this_store_is_refused(
    editor: EditorClient, workspace: Path, store: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    proc = await acli(other, store, "checkpoint")
    assert proc.returncode == 1
    assert "belongs to workspace" in proc.stderr


async def test_without_a_relay_the_lock_error_is_kept(
    relay_dir: Path, workspace: Path, store: Path, model: FakeModel
) -> None:
    os.mkdir(relay_dir, 0o755)
    os.chmod(relay_dir, 0o755)  # not private: the server runs without a relay, the client trusts none
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        await editor.request("retrace/timeline/tree", {})
        proc = await acli(workspace, store, "checkpoint")
        assert proc.returncode == 1
        assert "store is locked" in proc.stderr
        assert not wire.socket_path(store).exists()
    finally:
        await stop_editor(editor)


def _pid_of_holder(store: Path) -> int:
    """The lock holder's pid, 0 while a starting server has not written it yet."""
    try:
        return int((store / "lock.pid").read_text().strip() or 0)
    except FileNotFoundError:
        return 0


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return True
    return state in "ZX"


async def test_a_killed_servers_stale_socket_blocks_nothing(
    relay_dir: Path, workspace: Path, store: Path, model: FakeModel
) -> None:
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    await wait_for_relay(store)
    pid = _pid_of_holder(store)
    os.kill(pid, signal.SIGKILL)
    await wait_until(lambda: _gone(pid))
    with contextlib.suppress(Exception):  # the server is dead on purpose; its client may complain
        await asyncio.wait_for(editor.client.stop(), 10)
    path = wire.socket_path(store)
    assert path.exists()  # left behind by the kill

    (workspace / "late.txt").write_text("late\n", "utf-8")
    proc = await acli(workspace, store, "checkpoint", "--json")
    assert proc.returncode == 0, proc.stderr  # opened the store itself: the lock died with the server
    assert changed(json.loads(proc.stdout)) == {"late.txt"}

    again = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        await wait_until(lambda: _pid_of_holder(store) not in (0, pid))
        await wait_until(path.exists)
        (workspace / "later.txt").write_text("later\n", "utf-8")
        proc = await acli(workspace, store, "checkpoint", "--json")
        assert proc.returncode == 0, proc.stderr
        cp = json.loads(proc.stdout)
        await wait_until(
            lambda: any((c.get("checkpoint") or {}).get("id") == cp["id"] for c in again.timeline_changes)
        )
    finally:
        await stop_editor(again)
    assert not path.exists()  # a clean shutdown removes its socket


async def test_cli_checkpoints_during_an_agent_turn_are_serialised(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    names = [f"hook-{n}.txt" for n in range(6)]
    for name in names:
        (workspace / name).write_text(f"{name}\n", "utf-8")
    turn = asyncio.ensure_future(editor.run_turn("first task"))
    procs = await asyncio.gather(
        *(acli(workspace, store, "checkpoint", "--path", n, "--json") for n in names)
    )
    await turn
    made = []
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
        made.append(json.loads(proc.stdout))
    # Each command records its own file, unless the turn recorded the changes made beside it first
    # (an ``external`` checkpoint before a tool call): then the command finds nothing left to record.
    assert all(changed(cp) <= {n} for cp, n in zip(made, names, strict=True)), [changed(cp) for cp in made]
    await stop_editor(editor)

    entries = log_of(workspace, store)
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    assert all(ids.count(cp["id"]) == 1 for cp in made)
    parents = [e["parent"] for e in entries if e["parent"] is not None]
    assert len(parents) == len(set(parents)), "two checkpoints share a parent: not serialised"
    tool_files = set().union(*(changed(e) for e in entries if e["kind"] == "tool"))
    assert {"hello.txt", "src/app.py"} <= tool_files
    assert not tool_files & set(names)  # the agent never took a hook's file
    made_ids = {cp["id"] for cp in made}
    for name in names:  # every hook's file recorded once: by its command, or as the turn's external change
        takers = [e for e in entries if name in changed(e)]
        by = takers[0] if len(takers) == 1 else None
        assert by is not None and (by["id"] in made_ids or by["kind"] == "external"), (name, takers)
    verify = cli(workspace, store, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
