"""The CLI fork server (``tests/cli_forkserver.py``) runs a command as a cold process would.

The CLI tests and the data-safety campaigns run their commands through it; here each observable
of a command (exit code, stdout, stderr, environment, working directory, a crash's traceback,
a kill) is compared with the same command started cold.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests import cli_forkserver
from tests.cli import cli_support
from tests.cli.cli_support import RETRACE, Cli


@pytest.fixture(autouse=True)
def _fork_server_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the fork server: on even in a run with RETRACE_TEST_FORK_CLI=0."""
    monkeypatch.setenv("RETRACE_TEST_FORK_CLI", "1")


PROBE = """
import os, sys
print("argv", sys.argv[1:])
print("env", os.environ.get("PROBE_VALUE"), "HOME" in os.environ)
print("cwd", os.getcwd())
print("to stderr", file=sys.stderr)
code = sys.argv[1]
if code == "raise":
    raise RuntimeError("boom")
if code == "text":
    sys.exit("a message")
sys.exit(int(code))
"""


def _forked(code: str, argv: list[str], env: dict[str, str], tmp_path: Path) -> tuple[int, str, str]:
    out, err = tmp_path / "out", tmp_path / "err"
    out.write_bytes(b"")
    err.write_bytes(b"")
    server = cli_forkserver.server()
    exited = server.wait(server.spawn(code, argv, env=env, stdout=out, stderr=err))
    return exited.code, out.read_text(), err.read_text()


def _cold(code: str, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(
        [str(Path(RETRACE).with_name("python")), "-c", code, *argv[1:]],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("exit_with", ["0", "3", "130", "text", "raise"])
def test_a_forked_command_sees_and_returns_what_a_cold_one_does(
    exit_with: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "cwd ü"
    where.mkdir()
    monkeypatch.chdir(where)
    env = {**os.environ, "PROBE_VALUE": "välue"}
    forked = _forked(PROBE, ["-c", exit_with], env, tmp_path)
    cold = _cold(PROBE, ["-c", exit_with], env)
    assert forked[:2] == cold[:2]
    assert forked[2].splitlines()[0] == cold[2].splitlines()[0] == "to stderr"
    if exit_with == "raise":  # a traceback, as the interpreter prints it
        assert "Traceback" in forked[2]
        assert forked[2].strip().splitlines()[-1] == cold[2].strip().splitlines()[-1] == "RuntimeError: boom"
    else:
        assert forked[2] == cold[2]


def test_the_cli_helper_gives_the_console_scripts_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\r\ntwo\n")
    cli = Cli(workspace, tmp_path / "store")
    cli("init")
    for args, code in (
        (("--version",), 0),
        (("log", "--json"), 0),
        (("restore", "nope"), 1),
        (("nonsense",), 2),
    ):
        forked = cli(*args, code=None, where=args != ("--version",))
        monkeypatch.setenv("RETRACE_TEST_FORK_CLI", "0")
        cold = cli(*args, code=None, where=args != ("--version",))
        monkeypatch.setenv("RETRACE_TEST_FORK_CLI", "1")
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            cold.returncode,
            cold.stdout,
            cold.stderr,
        )
        assert forked.returncode == code, forked


def test_a_hung_command_is_killed_at_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_support, "_CONSOLE_SCRIPT", "import time\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        cli_support.run([str(RETRACE), "anything"], dict(os.environ), timeout=0.5)


def test_commands_run_side_by_side(tmp_path: Path) -> None:
    server = cli_forkserver.server()
    results: dict[int, int] = {}

    def one(n: int) -> None:
        out, err = tmp_path / f"out{n}", tmp_path / f"err{n}"
        out.write_bytes(b"")
        err.write_bytes(b"")
        pid = server.spawn(
            f"import time, sys\ntime.sleep(0.2)\nsys.exit({n})", ["-c"], env={}, stdout=out, stderr=err
        )
        results[n] = server.wait(pid).code

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: n for n in range(8)}


def test_a_killed_command_reports_its_signal(tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    out.write_bytes(b"")
    err.write_bytes(b"")
    server = cli_forkserver.server()
    pid = server.spawn("import time\ntime.sleep(60)", ["-c"], env={}, stdout=out, stderr=err)
    os.kill(pid, signal.SIGKILL)
    assert server.wait(pid).code == -signal.SIGKILL


@pytest.mark.parametrize(
    "args", [["--version"], ["nonsense"], ["log", "--json", "--store", "/nonexistent/store"]]
)
def test_python_dash_m_retrace_forks_like_it_runs_cold(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cmd = [sys.executable, "-m", "retrace", *args]
    forked = cli_support.run(cmd, dict(os.environ), timeout=60)
    monkeypatch.setenv("RETRACE_TEST_FORK_CLI", "0")
    cold = cli_support.run(cmd, dict(os.environ), timeout=60)
    assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_the_server_and_other_programs_are_never_forked() -> None:
    assert cli_support._forked_as([sys.executable, "-m", "retrace"]) is None
    assert cli_support._forked_as([sys.executable, "-m", "retrace", "serve"]) is None
    assert cli_support._forked_as(["git", "status"]) is None
    assert cli_support._forked_as([sys.executable, "-m", "retrace", "log"]) is not None
