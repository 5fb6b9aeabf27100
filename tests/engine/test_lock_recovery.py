"""A store lock held by a dead server is recovered safely.

The lock is an ``flock`` on an O_CLOEXEC descriptor: the kernel releases it when the holder dies
(``kill -9`` included), and child processes the server started (shell commands that outlive a
crash) never inherit it. So a restarted server opens the store at once, while a live holder is
still refused.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.errors import StoreLocked


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_a_killed_server_with_surviving_children_does_not_keep_the_store_locked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    store = tmp_path / "store"
    holder_code = (
        "import subprocess, sys, time\n"
        "from pathlib import Path\n"
        "from retrace.engine import Engine\n"
        "from retrace.engine.config import EngineConfig\n"
        f"e = Engine.open(Path({str(ws)!r}), Path({str(store)!r}), config=EngineConfig(watcher=False))\n"
        # What a running shell tool leaves behind: a child in its own session that outlives us.
        "child = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", holder_code], stdout=subprocess.PIPE, text=True)
    child_pid = 0
    try:
        assert holder.stdout is not None
        child_pid = int(holder.stdout.readline())
        with pytest.raises(StoreLocked, match=f"pid {holder.pid}"):
            Engine.open(ws, store, config=EngineConfig(watcher=False))
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert _alive(child_pid), "the child outlives the killed server"
        engine = Engine.open(ws, store, config=EngineConfig(watcher=False))  # recovered at once
        engine.close()
    finally:
        holder.kill()
        holder.wait()
        if child_pid:
            os.kill(child_pid, signal.SIGKILL)
