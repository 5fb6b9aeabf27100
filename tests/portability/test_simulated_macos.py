"""The engine's non-Linux code paths, run for real: ``sys.platform`` is ``darwin`` in a fresh
interpreter, so there is no inotify watcher (changes are found by the stat walk), no
``renameat2`` (the checked rename fallback), and the macOS letter-case rule is on. A session is
checkpointed and restored byte for byte on a real disk, and the watcher reports why it is off.
What it cannot show is the real macOS kernel and file system: that is not run here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

_ROUND_TRIP = textwrap.dedent(
    """
    import asyncio, json, os, pathlib, shutil, subprocess, sys, sysconfig, tempfile, threading
    import zoneinfo, ctypes.util, platformdirs, portalocker, pydantic, anthropic, pygls, zstandard
    sysconfig.get_config_vars()  # the standard library and dependencies load with the real platform
    sys.platform = "darwin"
    from pathlib import Path
    from retrace.engine import Engine
    from retrace.engine.fsops import posix as posix_backend
    from retrace.engine.config import EngineConfig
    from retrace.oscompat import ignores_case

    ws, store = Path(sys.argv[1]), Path(sys.argv[2])
    (ws / "a.txt").write_text("one\\n")
    engine = Engine.open(ws, store, config=EngineConfig())
    first = engine.checkpoint("first")
    (ws / "a.txt").write_text("two\\n")
    (ws / "src").mkdir()
    (ws / "src" / "b.bin").write_bytes(bytes(range(256)))
    (ws / "run.sh").write_text("#!/bin/sh\\n")
    os.chmod(ws / "run.sh", 0o755)
    os.symlink("a.txt", ws / "link")
    second = engine.checkpoint("second")  # no changed_paths hint: the stat walk must find them
    changed = sorted(c.path for c in engine.diff(first.id, second.id))
    outcome = engine.restore(first.id)
    after_first = sorted(p.name for p in ws.iterdir())
    text_after_first = (ws / "a.txt").read_text()
    engine.restore(second.id)
    status = engine.capture_status()
    engine.close()
    print(json.dumps({
        "changed": changed,
        "after_first": after_first,
        "text_after_first": text_after_first,
        "back": [(ws / "a.txt").read_text(), (ws / "src" / "b.bin").read_bytes() == bytes(range(256)),
                 os.access(ws / "run.sh", os.X_OK), os.readlink(ws / "link")],
        "renameat2": posix_backend.renameat2_call() is not None,
        "ignores_case": ignores_case(),
        "status": status,
    }, default=str))
    """
)


def test_checkpoint_and_restore_on_the_macos_code_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = subprocess.run(
        [sys.executable, "-I", "-c", _ROUND_TRIP, str(ws), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["changed"] == ["a.txt", "link", "run.sh", "src/b.bin"]
    assert result["after_first"] == ["a.txt"] and result["text_after_first"] == "one\n"
    assert result["back"] == ["two\n", True, True, "a.txt"]
    assert result["renameat2"] is False, "renameat2 is a Linux system call"
    assert result["ignores_case"] is True
    status = result["status"]
    assert status["watcher"] is False and "not available on this platform (darwin)" in status["watcherReason"]
