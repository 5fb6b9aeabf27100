"""The headless store holder over real processes (``retrace.relay.holder``, ``cli/holder.py``).

A cold ``retrace checkpoint`` (no editor) does its own work, then starts a detached holder that
takes the store's lock and serves the relay; the next calls are forwarded to it. It lets go when
asked (``retrace restore``/``gc``, an editor's server starting), after its idle time, and when
what it holds is deleted or replaced; a killed holder blocks nothing; two racing cold calls leave
one holder; ``RETRACE_NO_HOLDER=1`` starts none; an editor's server is never asked to let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.lsp.lsp_support import APP_PY, AUTO, fake_model, model_env, start_editor, stop_editor
from tests.workspaces import project

from retrace.relay import holder, wire
from retrace.relay.client import RelayRefusedError, forward

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "work space é", {"src/app.py": APP_PY})


@pytest.fixture
def store(
    tmp_path: Path, relay_dir: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """An initialised store; every holder started for it is stopped at the end (by pid)."""
    monkeypatch.delenv(holder.NO_HOLDER_ENV, raising=False)
    monkeypatch.setenv(holder.IDLE_ENV, "60")
    path = tmp_path / "the store ü"
    init = cli(workspace, path, "init")
    assert init.returncode == 0, init.stderr
    yield path
    for pid in holder_pids(path):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not holder_pids(path), "holders stopped at the end of the test")


def cli(
    workspace: Path, store: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(workspace), "--store", str(store)]
    full = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"} | (env or {})
    proc = cli_support.run(cmd, full, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def checkpoint(workspace: Path, store: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = cli(workspace, store, "checkpoint", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    cp = json.loads(proc.stdout)
    assert isinstance(cp, dict)
    return cp


def changed(cp: dict[str, Any]) -> set[str]:
    return {f["path"] for f in cp["files"]}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def holder_pids(store: Path) -> list[int]:
    """Live processes with a holder marker for ``store``."""
    runtime = store / "runtime"
    pids = [int(p.name.removeprefix("holder-")) for p in runtime.glob("holder-*")] if runtime.is_dir() else []
    return [pid for pid in pids if alive(pid)]


def lock_pid(store: Path) -> int:
    try:
        return int((store / "lock.pid").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def wait_for(condition: Callable[[], bool], what: str, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.02)


def serving_holder(store: Path) -> int:
    """Wait until exactly one holder holds the store's lock and listens; its pid."""

    def ready() -> bool:
        pids = holder_pids(store)
        return len(pids) == 1 and lock_pid(store) == pids[0] and wire.socket_path(store).exists()

    wait_for(ready, "a holder holding the store and listening", limit_s=60)
    return holder_pids(store)[0]


def log_ids(workspace: Path, store: Path) -> list[str]:
    proc = cli(workspace, store, "log", "--json")
    assert proc.returncode == 0, proc.stderr
    return [e["id"] for e in json.loads(proc.stdout)]


def test_a_cold_call_starts_a_holder_and_later_calls_are_forwarded_to_it(
    workspace: Path, store: Path
) -> None:
    assert holder_pids(store) == []
    (workspace / "a.txt").write_text("a\n", "utf-8")
    first = checkpoint(workspace, store, "--label", "cold")
    assert changed(first) == {"a.txt"}  # the cold call did its own work first
    pid = serving_holder(store)

    ids = [first["id"]]
    for n in range(3):
        (workspace / f"b{n}.txt").write_text(f"{n}\n", "utf-8")
        cp = checkpoint(workspace, store, "--label", f"warm {n}")
        # The lock never left the holder: only it could have made this checkpoint.
        assert lock_pid(store) == pid and holder_pids(store) == [pid]
        assert changed(cp) == {f"b{n}.txt"} and cp["parent"] == ids[-1]
        ids.append(cp["id"])
    (workspace / "c.txt").write_text("c\n", "utf-8")
    (workspace / "d.txt").write_text("d\n", "utf-8")
    exact = checkpoint(workspace, store, "--path", "c.txt")
    assert changed(exact) == {"c.txt"}
    # Garbage on the holder's socket gets a clear refusal; a refusal from the holder is reported
    # like the server's, and the holder keeps serving.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(wire.socket_path(store)))
        conn.sendall(b"not json\n")
        assert json.loads(wire.read_line(conn))["code"] == wire.INVALID_REQUEST
    outside = cli(workspace, store, "checkpoint", "--path", "../escape.txt")
    assert outside.returncode == 1 and outside.stderr.startswith("retrace: error: ")
    assert changed(checkpoint(workspace, store)) == {"d.txt"}
    assert holder_pids(store) == [pid]
    assert set(ids) <= set(log_ids(workspace, store))  # a read-only command leaves the holder be
    assert holder_pids(store) == [pid]


def test_a_name_that_is_not_utf8_crosses_the_relay(workspace: Path, store: Path) -> None:
    # A file name's bytes that are no UTF-8 travel as surrogates: the answer must still be sent.
    checkpoint(workspace, store)
    pid = serving_holder(store)
    name = b"bad\xff\xfe.txt"
    Path(os.fsdecode(os.path.join(os.fsencode(workspace), name))).write_bytes(b"one\n")
    proc = cli(workspace, store, "checkpoint", "--label", "label\x1b[2K\rx\ny")
    assert proc.returncode == 0, proc.stderr
    shown = cli(workspace, store, "show", proc.stdout.strip(), "--json")
    assert [os.fsencode(f["path"]) for f in json.loads(shown.stdout)["files"]] == [name]
    assert holder_pids(store) == [pid]


def test_a_call_while_the_holder_opens_the_store_waits_for_it(workspace: Path, store: Path) -> None:
    # A holder started just now (it may have the lock and no socket yet): the call waits for its
    # relay and is forwarded, without asking the lock again and again (each refusal counts as a
    # lock conflict). Whether the call lands in that window depends on timing.
    refused = store / "lock.refused"
    before = refused.stat().st_size if refused.exists() else 0
    argv = [sys.executable, "-m", "retrace.cli.holder", "--workspace", str(workspace), "--store", str(store)]
    started = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: lock_pid(store) == started.pid, "the holder takes the lock")
        (workspace / "during.txt").write_text("during\n", "utf-8")
        cp = checkpoint(workspace, store)
        assert changed(cp) == {"during.txt"}
        assert serving_holder(store) == started.pid  # it was forwarded: the holder still holds
        after = refused.stat().st_size if refused.exists() else 0
        assert after - before <= 1
    finally:
        started.terminate()
        started.wait(timeout=60)


@pytest.mark.parametrize("why", ["opted out", "unsafe relay directory"])
def test_no_holder_when_opted_out_or_no_relay_could_reach_it(
    workspace: Path, store: Path, relay_dir: Path, why: str
) -> None:
    env = {holder.NO_HOLDER_ENV: "1"} if why == "opted out" else {}
    if why == "unsafe relay directory":
        relay_dir.mkdir(mode=0o755)
        relay_dir.chmod(0o755)
    for n in range(2):
        (workspace / f"{n}.txt").write_text("a\n", "utf-8")
        assert changed(checkpoint(workspace, store, env=env)) == {f"{n}.txt"}  # cold, every time
    time.sleep(1.0)
    assert holder_pids(store) == []
    assert not wire.socket_path(store).exists()


def test_the_holder_exits_when_idle_and_frees_everything(workspace: Path, store: Path) -> None:
    checkpoint(workspace, store, env={holder.IDLE_ENV: "1"})
    pid = serving_holder(store)
    wait_for(lambda: not alive(pid), "the idle holder exits", limit_s=15)
    assert not wire.socket_path(store).exists()
    assert not holder.marker_path(store, pid).exists()
    assert "idle" in (store / "runtime" / "holder.log").read_text()
    # The lock is free: a plain cold call opens the store (and starts the next holder).
    (workspace / "late.txt").write_text("late\n", "utf-8")
    assert changed(checkpoint(workspace, store)) == {"late.txt"}
    assert serving_holder(store) != pid


@pytest.mark.parametrize("command", [["restore", "FIRST"], ["gc"]], ids=["restore", "gc"])
def test_a_command_needing_the_lock_asks_the_holder_to_let_go(
    workspace: Path, store: Path, command: list[str]
) -> None:
    first = checkpoint(workspace, store)
    pid = serving_holder(store)
    (workspace / "src" / "app.py").write_text("changed\n", "utf-8")
    checkpoint(workspace, store)
    args = [first["id"] if a == "FIRST" else a for a in command]
    proc = cli(workspace, store, *args)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: not alive(pid), "the holder let go and exited")
    assert "asked to" in (store / "runtime" / "holder.log").read_text()
    if command[0] == "restore":
        assert (workspace / "src" / "app.py").read_text("utf-8") == APP_PY
    assert holder_pids(store) == []  # only a checkpoint (or hook) starts one


def test_a_killed_holder_blocks_nothing(workspace: Path, store: Path) -> None:
    checkpoint(workspace, store)
    pid = serving_holder(store)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the killed holder is gone")
    assert wire.socket_path(store).exists()  # stale, left by the kill
    assert holder.marker_path(store, pid).exists()  # stale too
    (workspace / "after.txt").write_text("after\n", "utf-8")
    assert changed(checkpoint(workspace, store)) == {"after.txt"}
    second = serving_holder(store)
    assert second != pid
    assert not holder.marker_path(store, pid).exists()  # the next holder cleared the dead one's
    (workspace / "again.txt").write_text("again\n", "utf-8")
    assert changed(checkpoint(workspace, store)) == {"again.txt"}
    assert lock_pid(store) == second


def test_racing_cold_calls_leave_one_holder_and_lose_nothing(workspace: Path, store: Path) -> None:
    names = [f"race-{n}.txt" for n in range(4)]
    for name in names:
        (workspace / name).write_text(f"{name}\n", "utf-8")
    cmd = [str(RETRACE), "checkpoint", "--json", "--workspace", str(workspace), "--store", str(store)]
    procs = [
        subprocess.Popen([*cmd, "--path", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in names
    ]
    made = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        made.append(json.loads(out))
    pid = serving_holder(store)
    time.sleep(1.0)  # late starters find the store locked and exit
    assert holder_pids(store) == [pid]
    proc = cli(workspace, store, "log", "--json")
    entries = json.loads(proc.stdout)
    ids = [e["id"] for e in entries]
    assert all(ids.count(cp["id"]) == 1 for cp in made)
    # Every file is recorded (the first cold open records what predates it as external changes).
    assert set(names) <= set().union(*(changed(e) for e in entries))
    parents = [e["parent"] for e in entries if e["parent"] is not None]
    assert len(parents) == len(set(parents)), "two checkpoints share a parent: not serialised"
    verify = cli(workspace, store, "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("gone", ["workspace", "store", "store deleted", "socket"])
def test_the_holder_exits_when_what_it_holds_is_gone(
    workspace: Path, store: Path, relay_dir: Path, tmp_path: Path, gone: str
) -> None:
    checkpoint(workspace, store)
    pid = serving_holder(store)
    if gone == "workspace":
        shutil.rmtree(workspace)
    elif gone == "store deleted":
        shutil.rmtree(store)
    elif gone == "store":
        store.rename(tmp_path / "store-moved")
        shutil.copytree(tmp_path / "store-moved", store)  # replaced by a copy: not the same store
    else:
        wire.socket_path(store).unlink()
    logs = [p / "runtime" / "holder.log" for p in (store, tmp_path / "store-moved")]
    shown = " | ".join(p.read_text("utf-8")[-600:] for p in logs if p.exists())
    wait_for(lambda: not alive(pid), f"the holder notices its {gone} is gone (log: {shown})", limit_s=40)
    # Letting go wrote nothing back: a deleted workspace or store stays deleted.
    assert workspace.exists() is (gone != "workspace")
    assert store.exists() is (gone != "store deleted")


async def test_an_editor_server_takes_the_store_from_a_holder(workspace: Path, store: Path) -> None:
    (workspace / "held.txt").write_text("held\n", "utf-8")
    first = checkpoint(workspace, store, "--label", "before the editor")
    pid = serving_holder(store)
    (workspace / "held2.txt").write_text("held 2\n", "utf-8")
    second = checkpoint(workspace, store, "--label", "through the holder")
    model = fake_model("session")
    try:
        editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
        try:
            tree = await editor.request("retrace/timeline/tree", {})
            shown = json.dumps(tree)
            assert first["id"] in shown and second["id"] in shown
            await asyncio.to_thread(wait_for, lambda: not alive(pid), "the holder exits after letting go")
            await asyncio.to_thread(wait_for, lambda: wire.socket_path(store).exists(), "the editor's relay")
            editor_pid = lock_pid(store)
            assert editor_pid not in (0, pid)
            # The editor's server is never asked to let go: a command needing the lock is refused,
            # a forwarded checkpoint goes to the editor, and no holder is started meanwhile.
            gc = await asyncio.to_thread(cli, workspace, store, "gc")
            assert gc.returncode == 1 and "store is locked" in gc.stderr
            with pytest.raises(RelayRefusedError) as refused:
                await asyncio.to_thread(forward, store, holder.RELEASE_METHOD, {})
            assert refused.value.code == wire.NOT_HOLDER
            # Even a marker naming the editor's pid (a reused pid) gets a refusal, not a release.
            fake = holder.marker_path(store, editor_pid)
            fake.write_bytes(b"")
            try:
                assert not await asyncio.to_thread(holder.release, store, editor_pid, 2.0)
            finally:
                fake.unlink()
            (workspace / "live.txt").write_text("live\n", "utf-8")
            cp = await asyncio.to_thread(checkpoint, workspace, store)
            assert changed(cp) == {"live.txt"}
            assert lock_pid(store) == editor_pid and holder_pids(store) == []
        finally:
            await stop_editor(editor)
    finally:
        model.stop()


def _hook(workspace: Path, store: Path, event: dict[str, Any]) -> None:
    cmd = [str(RETRACE), "hook", "claude-code", "--workspace", str(workspace), "--store", str(store)]
    full = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}
    proc = subprocess.run(
        cmd, input=json.dumps(event), capture_output=True, text=True, env=full, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


def test_a_cold_hook_call_starts_a_holder_that_takes_the_agents_next_calls(
    workspace: Path, store: Path
) -> None:
    base = {"session_id": "s-holder", "transcript_path": "/tmp/t.jsonl", "cwd": str(workspace)}
    _hook(workspace, store, {**base, "hook_event_name": "UserPromptSubmit", "prompt": "add notes"})
    pid = serving_holder(store)  # the cold hook call started it
    notes = workspace / "notes.md"
    write = {"tool_name": "Write", "tool_input": {"file_path": str(notes), "content": "notes\n"}}
    _hook(workspace, store, {**base, "hook_event_name": "PreToolUse", **write, "tool_use_id": "toolu_h1"})
    notes.write_text("notes\n", "utf-8")  # the agent's tool runs between its two hooks
    _hook(workspace, store, {**base, "hook_event_name": "PostToolUse", **write, "tool_use_id": "toolu_h1"})
    _hook(workspace, store, {**base, "hook_event_name": "Stop"})
    assert holder_pids(store) == [pid] and lock_pid(store) == pid  # forwarded: the holder kept the lock
    proc = cli(workspace, store, "log", "--json")
    tools = [e for e in json.loads(proc.stdout) if e.get("kind") == "tool"]
    assert [(e["tool"], e["toolCallId"], e["sessionId"]) for e in tools] == [
        ("Write", "toolu_h1", "claude-code-s-holder")
    ]
    assert {f["path"] for f in tools[0]["files"]} == {"notes.md"}
