"""The real ``retrace`` CLI as a subprocess on a temporary workspace + store, shared by the CLI
tests and the data-safety tests."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import cli_forkserver

RETRACE = Path(sys.executable).with_name("retrace")


_CONSOLE_SCRIPT = RETRACE.read_text("utf-8") if RETRACE.exists() else ""
"""The console script's own code (what ``retrace`` runs after the interpreter starts)."""


RUN_PRELOAD = (
    *cli_forkserver.PRELOAD,
    "retrace.cli.run",
    "anthropic",
    "openai",
    "retrace.agent.runtime:warm_sdk",
)
"""What ``retrace run`` (a headless agent turn) imports on top of every command: the model SDKs
(~1.3 CPU-seconds a fork would pay on every run) and their TLS context; a fork server of its own,
started by the first test process that runs one, so the other commands' forks do not pay for them."""


def _forked_as(cmd: list[str]) -> tuple[str, list[str]] | None:
    """The code and ``sys.argv`` a fork runs for ``cmd``: the console script (``retrace ...``) or
    ``python -m retrace <command> ...``; ``None`` for anything else (the server included: it
    runs cold)."""
    if not cli_forkserver.enabled():
        return None
    if cmd[:1] == [str(RETRACE)] and _CONSOLE_SCRIPT:
        return _CONSOLE_SCRIPT, [str(RETRACE), *cmd[1:]]
    if cmd[:3] == [sys.executable, "-m", "retrace"] and cmd[3:] not in ([], ["serve"]):
        return cli_forkserver.RUN_MODULE, ["-m", *cmd[3:]]
    return None


def run(
    cmd: list[str],
    env: dict[str, str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """``retrace <args>`` or ``python -m retrace <args>`` as ``subprocess.run(cmd,
    capture_output=True, text=True, cwd=cwd, input=input)`` would (stdin from the null device
    when there is no ``input``): a fork of the CLI fork server (``tests/cli_forkserver.py``, the
    imports done once per test process) running what the console script or ``-m`` runs, or the
    command itself, cold, with RETRACE_TEST_FORK_CLI=0. ``TimeoutExpired`` after ``timeout``
    seconds (the command is killed)."""
    ran = run_bytes(cmd, env, timeout=timeout, cwd=cwd, input=input)
    return subprocess.CompletedProcess(cmd, ran.returncode, _text(ran.stdout), _text(ran.stderr))


def run_bytes(
    cmd: list[str],
    env: dict[str, str],
    *,
    timeout: float,
    cwd: Path | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run` with the output as bytes, as ``subprocess.run(cmd, capture_output=True)``
    gives it."""
    forked = _forked_as(cmd)
    if forked is None:
        return subprocess.run(
            cmd,
            capture_output=True,
            env=env,
            timeout=timeout,
            check=False,
            cwd=cwd,
            **({"input": input} if input is not None else {"stdin": subprocess.DEVNULL}),
        )
    code, argv = forked
    # argv[1] is the command word for both forms (``[script, command, ...]``, ``["-m", command, ...]``).
    forks = cli_forkserver.server(RUN_PRELOAD if argv[1:2] == ["run"] else cli_forkserver.PRELOAD)
    ran = forks.run(code, argv, env=env, timeout=timeout, input=input, cwd=cwd)
    if ran.killed:
        raise subprocess.TimeoutExpired(cmd, timeout, ran.stdout, ran.stderr)
    return subprocess.CompletedProcess(cmd, ran.exit.code, ran.stdout, ran.stderr)


def _text(data: bytes) -> str:
    """A captured stream as ``subprocess.run(..., text=True)`` gives it (the locale's encoding,
    universal newlines)."""
    with io.TextIOWrapper(io.BytesIO(data)) as text:
        return text.read()


class Cli:
    """``retrace <args> --workspace W --store S``, one process per call (a fork of the CLI fork
    server): ``cli(...)`` asserts no traceback and the exit code; ``cli.json(...)`` parses
    ``--json``. The campaigns' :class:`tests.reliability.cli_support.CampaignCli` is this class
    measuring each command's peak RSS and raising ``CliError`` instead of asserting."""

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
