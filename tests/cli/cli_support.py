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


_RUN_MODULE = "import runpy\nrunpy.run_module('retrace', run_name='__main__', alter_sys=True)\n"
"""What ``python -m retrace`` runs after the interpreter starts."""


def _forked_as(cmd: list[str]) -> tuple[str, list[str]] | None:
    """The code and ``sys.argv`` a fork runs for ``cmd``: the console script (``retrace ...``) or
    ``python -m retrace <command> ...``; ``None`` for anything else (the server included: it
    runs cold)."""
    if not cli_forkserver.enabled():
        return None
    if cmd[:1] == [str(RETRACE)] and _CONSOLE_SCRIPT:
        return _CONSOLE_SCRIPT, [str(RETRACE), *cmd[1:]]
    if cmd[:3] == [sys.executable, "-m", "retrace"] and cmd[3:] not in ([], ["serve"]):
        return _RUN_MODULE, ["-m", *cmd[3:]]
    return None


def run(cmd: list[str], env: dict[str, str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """``retrace <args>`` or ``python -m retrace <args>`` as ``subprocess.run(cmd,
    capture_output=True, text=True)`` would, stdin from the null device: a fork of the CLI fork
    server (``tests/cli_forkserver.py``, the imports done once per test process) running what the
    console script or ``-m`` runs, or the command itself, cold, with RETRACE_TEST_FORK_CLI=0.
    ``TimeoutExpired`` after ``timeout`` seconds (the command is killed)."""
    forked = _forked_as(cmd)
    if forked is None:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    code, argv = forked
    server = cli_forkserver.server()
    with tempfile.TemporaryDirectory(prefix="retrace-cli-") as tmp:
        out, err = Path(tmp, "out"), Path(tmp, "err")
        out.touch()
        err.touch()
        pid = server.spawn(code, argv, env=env, stdout=out, stderr=err)
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
