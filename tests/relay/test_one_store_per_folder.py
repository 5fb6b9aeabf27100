"""One store per folder across processes: a real server started with the extension's arguments
(no ``storeDir``; the old workspace-storage store named as ``legacyStoreDir``) and the real
``retrace`` command line (no ``--store``) find the same store for a folder; an old extension
store is adopted and its sessions appear; a store left on another file system is reached through
the pointer by the command line, the server and the relay; a forged pointer is ignored with a
clear line. Every test has its own user data dir (``XDG_DATA_HOME``) and no ``$RETRACE_STORE``."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.lsp.lsp_support import APP_PY, EditorClient, start_editor, stop_editor, wait_until
from tests.workspaces import project

from retrace.engine import Engine
from retrace.engine.store import adopt as adopt_mod
from retrace.engine.store import home
from retrace.relay import wire

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "work space", {"src/app.py": APP_PY}).resolve()


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test's user data dir, for this process and every child (server, command line)."""
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """Where an older extension kept the folder's store (VS Code's workspace storage)."""
    return tmp_path / "user-data" / "User" / "workspaceStorage" / "0a1b2c" / "retrace.retrace" / "store"


def cli(env: dict[str, str], workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(workspace)]  # no --store: the folder's rule
    proc = cli_support.run(cmd, env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def log_labels(env: dict[str, str], workspace: Path) -> list[str]:
    proc = cli(env, workspace, "log", "--json")
    assert proc.returncode == 0, proc.stderr
    return [e.get("label") or "" for e in json.loads(proc.stdout)]


async def extension_server(workspace: Path, legacy: Path, env: dict[str, str]) -> EditorClient:
    """The server as the extension starts it: no store named, the old place handed over."""
    return await start_editor(
        workspace, Path("/unused"), env=env, init_options={"storeDir": None, "legacyStoreDir": str(legacy)}
    )


@pytest.fixture
async def stopper() -> AsyncIterator[list[EditorClient]]:
    editors: list[EditorClient] = []
    yield editors
    for editor in editors:
        if not editor.client.stopped:
            await stop_editor(editor)


def old_store(workspace: Path, store: Path, label: str) -> str:
    (workspace / "src" / "old.py").write_text(f"# {label}\n", "utf-8")
    with Engine.open(workspace, store, session_id="old-session") as engine:
        return engine.checkpoint(label=label).id


async def held_store(editor: EditorClient) -> Path:
    state: dict[str, Any] = await editor.request("retrace/server/state")
    return Path(state["storeDir"])


async def test_extension_server_and_command_line_share_the_folders_store(
    workspace: Path, legacy: Path, env: dict[str, str], stopper: list[EditorClient]
) -> None:
    editor = await extension_server(workspace, legacy, env)
    stopper.append(editor)
    store = await held_store(editor)
    assert store == home.store_home(workspace)
    assert not await asyncio.to_thread(legacy.exists)  # the server created no store at the old place
    await wait_until(lambda: wire.socket_path(store).exists())
    # The command line finds the same store: the server holds it, so it takes the call.
    (workspace / "src" / "cli.py").write_text("x = 1\n", "utf-8")
    made = cli(env, workspace, "checkpoint", "--label", "from the command line", "--json")
    assert made.returncode == 0, made.stderr
    cp_id = json.loads(made.stdout)["id"]
    timeline = await editor.request("retrace/timeline/get", {"sessionId": "cli"})
    assert cp_id in [c["id"] for c in timeline["checkpoints"]]
    assert "from the command line" in log_labels(env, workspace)


async def test_old_extension_store_is_adopted_and_its_sessions_appear(
    workspace: Path, legacy: Path, env: dict[str, str], stopper: list[EditorClient]
) -> None:
    cp_id = old_store(workspace, legacy, "made by the old extension")
    editor = await extension_server(workspace, legacy, env)
    stopper.append(editor)
    store = await held_store(editor)
    assert store == home.store_home(workspace)
    assert not await asyncio.to_thread(legacy.exists)  # moved, not copied
    timeline = await editor.request("retrace/timeline/get", {"sessionId": "old-session"})
    assert cp_id in [c["id"] for c in timeline["checkpoints"]]
    assert "old-session" in [s["id"] for s in timeline["sessions"]]
    assert "made by the old extension" in log_labels(env, workspace)


async def test_store_on_another_file_system_is_reached_through_the_pointer(
    workspace: Path, legacy: Path, env: dict[str, str], stopper: list[EditorClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    cp_id = old_store(workspace, legacy, "on the other disk")

    def exdev(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    with monkeypatch.context() as patch:  # the move fails as across file systems
        patch.setattr(adopt_mod.os, "rename", exdev)
        assert adopt_mod.adopt(workspace, legacy).action == "pointed"
    assert home.pointer_file(home.store_home(workspace)).is_file()
    # The command line follows the pointer, to read and (no server running) to write.
    (workspace / "src" / "cold.py").write_text("z = 3\n", "utf-8")
    cold = cli(env, workspace, "checkpoint", "--label", "no server running")
    assert cold.returncode == 0, cold.stderr
    assert {"on the other disk", "no server running"} <= set(log_labels(env, workspace))
    # A server started with no old store named (another client) follows it too.
    editor = await start_editor(workspace, Path("/unused"), env=env, init_options={"storeDir": None})
    stopper.append(editor)
    assert await held_store(editor) == legacy
    timeline = await editor.request("retrace/timeline/get", {"sessionId": "old-session"})
    assert cp_id in [c["id"] for c in timeline["checkpoints"]]
    # And the relay: the command line hands its checkpoint to that server (it holds the lock).
    await wait_until(lambda: wire.socket_path(legacy).exists())
    (workspace / "src" / "via_relay.py").write_text("y = 2\n", "utf-8")
    made = cli(env, workspace, "checkpoint", "--label", "through the relay", "--json")
    assert made.returncode == 0, made.stderr
    timeline = await editor.request("retrace/timeline/get", {"sessionId": "cli"})
    assert json.loads(made.stdout)["id"] in [c["id"] for c in timeline["checkpoints"]]
    assert not home.store_home(workspace).exists()  # nothing was created at home


def test_forged_pointer_is_ignored_with_a_clear_line(
    workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    other = tmp_path / "someone else"
    other.mkdir()
    foreign = tmp_path / "foreign-store"
    old_store(workspace, tmp_path / "scratch", "x")  # (the workspace's own file only)
    with Engine.open(other, foreign) as engine:
        foreign_head = engine.head.id
    pointer = home.pointer_file(home.store_home(workspace))
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(json.dumps({"store": str(foreign), "workspace": str(workspace)}))
    init = cli(env, workspace, "init")
    assert init.returncode == 0, init.stderr
    assert "store pointer" in init.stderr and "ignored" in init.stderr
    assert "belongs to workspace" in init.stderr
    assert (home.store_home(workspace) / "store.json").is_file()  # the folder got its own store
    with Engine.open(other, foreign, readonly=True) as engine:
        assert engine.head.id == foreign_head  # the forged target was never written
    # Damaged: not JSON at all.
    pointer.write_text("{garbage")
    proc = cli(env, workspace, "log", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (home.store_home(workspace) / "store.json").is_file()
