"""The inotify watcher: a complete dirty set right after a command exits, and safe fallbacks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.watch import Watcher
from retrace.engine.config import TOOL_FOLDERS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")

Open = Callable[..., Engine]


def sh(ws: Path, script: str) -> None:
    subprocess.run(script, shell=True, cwd=ws, check=True)


def test_drain_reports_files_and_new_directories(tmp_path: Path) -> None:
    write(tmp_path, "a/b.txt", "x")
    w = Watcher(tmp_path, Ignorer(tmp_path, EngineConfig()))
    assert w.start() and w.healthy
    sh(tmp_path, "echo y > a/b.txt && mkdir -p n/m && echo z > n/m/deep.txt && rm a/b.txt")
    d = w.drain()
    assert "a/b.txt" in d.files and "n" in d.dirs
    # The new directory tree is watched now: later writes inside it are seen.
    sh(tmp_path, "echo again > n/m/deep.txt")
    assert "n/m/deep.txt" in w.drain().files
    assert not w.drain(), "a drain consumes the events"
    w.close()


def test_excluded_directories_are_not_watched(tmp_path: Path) -> None:
    write(tmp_path, "node_modules/pkg/i.js", "x")
    write(tmp_path, "package.json", "{}")
    w = Watcher(tmp_path, Ignorer(tmp_path, EngineConfig()))
    w.start()
    assert "node_modules" not in w._wd.values() and "node_modules/pkg" not in w._wd.values()
    assert "node_modules" in TOOL_FOLDERS
    w.close()


def test_shell_checkpoints_use_the_watcher_not_a_walk(ws: Path, open_engine: Open) -> None:
    write(ws, "src/app.py", "print(1)\n")
    eng = open_engine()
    cap = eng.capturer
    assert cap is not None and cap.watcher_healthy
    walks = cap.walks
    sh(
        ws,
        "mkdir -p src/pkg/sub && for i in 1 2 3; do echo $i > src/pkg/sub/f$i.py; done"
        " && mv src/app.py src/main.py",
    )
    cp = eng.checkpoint("shell", kind="tool")
    assert {(f.path, f.status) for f in cp.files} == {
        ("src/main.py", "renamed"),
        ("src/pkg/sub/f1.py", "added"),
        ("src/pkg/sub/f2.py", "added"),
        ("src/pkg/sub/f3.py", "added"),
    }
    sh(ws, "mv src/pkg moved && rm -rf moved/sub/f1.py")
    cp2 = eng.checkpoint("shell 2", kind="tool")
    assert {(f.path, f.status) for f in cp2.files} == {
        ("moved/sub/f2.py", "renamed"),
        ("moved/sub/f3.py", "renamed"),
        ("src/pkg/sub/f1.py", "deleted"),
    }
    sh(ws, "echo after-move > moved/sub/f2.py && rm -rf moved")
    cp3 = eng.checkpoint("shell 3", kind="tool")
    assert {(f.path, f.status) for f in cp3.files} == {
        ("moved/sub/f2.py", "deleted"),
        ("moved/sub/f3.py", "deleted"),
    }
    assert cap.walks == walks, "the watcher answered; no stat walk"
    assert cap.watcher_healthy


def test_gitignore_change_falls_back_to_a_walk(ws: Path, open_engine: Open) -> None:
    write(ws, "a.log", "log")
    write(ws, "a.txt", "txt")
    eng = open_engine()
    assert "a.log" in eng.head_manifest
    walks = eng.capturer.walks if eng.capturer else 0
    write(ws, ".gitignore", "*.log\n")
    cp = eng.checkpoint("ignore logs")
    assert {(f.path, f.status) for f in cp.files} == {(".gitignore", "added"), ("a.log", "deleted")}
    assert eng.capturer is not None and eng.capturer.walks == walks + 1
    assert eng.capturer.watcher_healthy, "rebuilt by the walk"
    write(ws, "b.log", "more logs")
    write(ws, "b.txt", "tracked")
    cp2 = eng.checkpoint("after")
    assert [f.path for f in cp2.files] == ["b.txt"]


def test_overflow_makes_the_next_detect_walk(ws: Path, open_engine: Open) -> None:
    eng = open_engine()
    cap = eng.capturer
    assert cap is not None and cap.watcher is not None
    cap.watcher.invalidate("inotify event queue overflowed")
    write(ws, "x.txt", "x")
    cp = eng.checkpoint("after overflow")
    assert [f.path for f in cp.files] == ["x.txt"] and cap.watcher_healthy


def test_watcher_and_walk_agree(ws: Path, store: Path, tmp_path: Path) -> None:
    """The same shell session captured with the watcher and with stat walks gives the same trees."""
    write(ws, "d/one.txt", "1")
    write(ws, "keep/k.txt", "k")
    script = [
        "mkdir -p a/b/c && echo 1 > a/b/c/x && ln -s ../keep a/lnk",
        "mv d e && chmod +x e/one.txt && : > empty.txt",
        "rm -rf a && mkdir a && echo new > a/x",
        "mv keep/k.txt keep/k2.txt && rmdir e 2>/dev/null; rm -rf e",
        "rm empty.txt && mkdir empty.txt && echo inside > empty.txt/f",
        "rm -rf a && echo now-a-file > a",
        "mkdir -p deep/er && echo x > deep/er/f && mv deep/er deep2 && rm -rf deep",
    ]
    results = []
    for watcher in (True, False):
        wsx = tmp_path / f"ws-{watcher}"
        subprocess.run(["cp", "-a", str(ws), str(wsx)], check=True)
        eng = Engine.open(wsx, tmp_path / f"store-{watcher}", config=EngineConfig(watcher=watcher))
        try:
            states = []
            for cmd in script:
                sh(wsx, cmd)
                eng.checkpoint(cmd)
                states.append(dict(eng.head_manifest))
            results.append(states)
            assert {p for p in entry_hashes(wsx)} == set(states[-1])
        finally:
            eng.close()
    assert results[0] == results[1]


def test_capture_status_reports_the_fallback(ws: Path, open_engine: Open) -> None:
    eng = open_engine()
    status = eng.capture_status()
    assert status["watcher"] is True and status["walks"] == 1
    off = Engine.open(ws, ws.parent / "store-nowatch", config=EngineConfig(watcher=False))
    try:
        assert off.capture_status() == {"watcher": False, "watcherReason": "watcher disabled", "walks": 1}
        off.checkpoint("walks")
        assert off.capture_status()["walks"] == 2
    finally:
        off.close()


def test_watch_limit_falls_back_to_walks(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import retrace.engine.capture.watch as watch_module

    real = watch_module._libc()
    assert real is not None

    class LimitedLibc:
        def inotify_init1(self, flags: int) -> int:
            return int(real.inotify_init1(flags))

        def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
            return -1

    monkeypatch.setattr(watch_module, "_libc", LimitedLibc)
    monkeypatch.setattr(watch_module.ctypes, "get_errno", lambda: errno.ENOSPC)
    write(ws, "a.txt", "a")
    eng = open_engine()
    status = eng.capture_status()
    assert not status["watcher"] and "watch limit" in status["watcherReason"]
    write(ws, "b.txt", "b")
    cp = eng.checkpoint("walked")
    assert [f.path for f in cp.files] == ["b.txt"]
    assert eng.capture_status()["walks"] == status["walks"] + 1


_NO_CHILD_PROCESS = """
import sys, tempfile
from pathlib import Path
started = []
sys.addaudithook(lambda event, args: started.append(event) if event in (
    "subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec") else None)
from retrace.engine import EngineConfig
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.watch import Watcher
from retrace.engine.fsops.posix import renameat2_call
root = Path(tempfile.mkdtemp())
for _ in range(3):
    w = Watcher(root, Ignorer(root, EngineConfig()))
    assert w.start() and w.healthy
    w.close()
assert renameat2_call() is not None
print(started)
"""


def test_watching_and_the_rename_call_start_no_process() -> None:
    """The C library is the process's own (``dlopen(NULL)``), not found by name: a name lookup
    (``ctypes.util.find_library``) starts ``ldconfig`` — a fork of the whole server — and the
    watcher did it for every watch it set up."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_CHILD_PROCESS], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "[]", proc.stdout
