"""The real ``retrace`` CLI as a subprocess on a temporary workspace + store, shared by the CLI
tests and the data-safety tests."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tests import cli_forkserver

RETRACE = Path(sys.executable).with_name("retrace")


def tree(root: Path) -> dict[str, str]:
    """path → sha256 of every file under ``root`` (directories implied)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


_CONSOLE_SCRIPT = RETRACE.read_text("utf-8") if RETRACE.exists() else ""
"""The console script's own code (what ``retrace`` runs after the interpreter starts)."""


def run(cmd: list[str], env: dict[str, str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """``retrace`` with ``cmd[1:]`` as ``subprocess.run(cmd, capture_output=True, text=True)``
    would, stdin from the null device: a fork of the CLI fork server (``tests/cli_forkserver.py``,
    the imports done once per test process) running the console script's code, or the console
    script itself with RETRACE_TEST_FORK_CLI=0. ``TimeoutExpired`` after ``timeout`` seconds
    (the command is killed)."""
    if not cli_forkserver.enabled() or not _CONSOLE_SCRIPT:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    server = cli_forkserver.server()
    with tempfile.TemporaryDirectory(prefix="retrace-cli-") as tmp:
        out, err = Path(tmp, "out"), Path(tmp, "err")
        out.touch()
        err.touch()
        pid = server.spawn(_CONSOLE_SCRIPT, [str(RETRACE), *cmd[1:]], env=env, stdout=out, stderr=err)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            exited = server.wait(pid)
        finally:
            timer.cancel()
        stdout, stderr = _text(out), _text(err)
    if killed.is_set():
        raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr)
    return subprocess.CompletedProcess(cmd, exited.code, stdout, stderr)


def _text(path: Path) -> str:
    """A captured stream as ``subprocess.run(..., text=True)`` gives it (the locale's encoding,
    universal newlines)."""
    with path.open("rb") as raw, io.TextIOWrapper(raw) as text:
        return text.read()


class Cli:
    def __init__(self, workspace: Path, store: Path) -> None:
        self.workspace = workspace
        self.store = store
        self.env = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}

    def __call__(
        self, *args: str, code: int | None = 0, where: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [str(RETRACE), *args]
        if where:
            cmd += ["--workspace", str(self.workspace), "--store", str(self.store)]
        proc = run(cmd, self.env, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        if code is not None:
            assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self(*args, "--json", code=code).stdout)
