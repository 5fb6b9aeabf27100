"""The workbench pool's server launcher (``tests/e2e/server_forks.py``) behaves as the server it
stands for, seen from the process that started it (the extension).

The pool points ``retrace.pythonPath`` at the launcher, so every UI scenario relies on it: a
server started through it must answer JSON-RPC on the launcher's stdin/stdout, log to its
stderr, read the key from the pipe the extension hands over, end when the launcher is told to,
die when the launcher is killed (the scenarios that kill "the server" kill the launcher), and
report its exit as the launcher's. Anything but the server's own command line runs the real
interpreter. Also: the fork server takes a command's stderr as a third descriptor.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests import cli_forkserver
from tests.jsonrpc_frames import read, send

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("server-forks")
    path = where / "python"
    service = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.server_forks", str(where / "socket"), str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert service.stdout is not None and service.stdout.readline() == b"ready\n"
    yield path
    assert service.stdin is not None
    service.stdin.close()
    service.wait(timeout=30)


def _start(launcher: Path, workspace: Path, key: str | None = None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RETRACE_", "ANTHROPIC_"))}
    env.update({"RETRACE_FAKE_MODEL": "demo", "RETRACE_LOG_LEVEL": "INFO"})
    pass_fds: tuple[int, ...] = ()
    read_end = None
    if key is not None:
        read_end, write_end = os.pipe()
        os.write(write_end, key.encode())
        os.close(write_end)
        os.set_inheritable(read_end, True)
        env["RETRACE_API_KEY_FD"] = str(read_end)
        pass_fds = (read_end,)
    proc = subprocess.Popen(
        [str(launcher), "-I", "-m", "retrace", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=env,
        pass_fds=pass_fds,
    )
    if read_end is not None:
        os.close(read_end)
    return proc


def _initialize(proc: subprocess.Popen[bytes], workspace: Path, store: Path) -> dict[str, Any]:
    params = {
        "processId": os.getpid(),
        "rootUri": workspace.as_uri(),
        "capabilities": {},
        "initializationOptions": {"storeDir": str(store)},
    }
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    while True:
        message = read(proc)
        if message.get("id") == 1:
            return message


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _server_of(launcher_pid: int, workspace: Path) -> int:
    """The forked server serving the launcher: the process whose working directory is the
    workspace and that is not the launcher (a child of the fork server)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != launcher_pid:
                try:
                    if Path(os.readlink(entry / "cwd")) == workspace.resolve():
                        return int(entry.name)
                except OSError:
                    continue
        time.sleep(0.05)
    raise AssertionError("no forked server found")


def test_a_server_started_through_the_launcher_answers_logs_and_ends_when_told(
    launcher: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _start(launcher, workspace, key="sk-ant-test-through-the-pipe")
    try:
        reply = _initialize(proc, workspace, tmp_path / "store")
        assert "result" in reply, reply
        server = _server_of(proc.pid, workspace)
        assert server not in _children(proc.pid), "the server is a fork, not the launcher's child"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
        assert proc.stderr is not None
        assert b"sk-ant-test" not in proc.stderr.read()
        assert (
            not Path(f"/proc/{server}").exists() or "Z" in Path(f"/proc/{server}/stat").read_text().split()[2]
        )
    finally:
        proc.kill()


def test_killing_the_launcher_kills_its_server(launcher: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _start(launcher, workspace)
    try:
        assert "result" in _initialize(proc, workspace, tmp_path / "store")
        server = _server_of(proc.pid, workspace)
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{server}").exists() and time.monotonic() < deadline:
            state = Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        else:
            assert not Path(f"/proc/{server}").exists(), "the server outlived its launcher"
    finally:
        proc.kill()


def test_other_command_lines_run_the_real_interpreter(launcher: Path) -> None:
    ran = subprocess.run(
        [str(launcher), "-I", "-c", "import sys; print(sys.flags.isolated, sys.argv[1:])", "a"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.split() == ["1", "['a']"]


def test_the_fork_server_takes_stderr_as_a_third_descriptor(tmp_path: Path) -> None:
    forks = cli_forkserver.server()
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    os.write(stdin_w, b"in\n")
    os.close(stdin_w)
    pid = forks.spawn(
        "import sys\nprint(sys.stdin.readline().strip(), 'out')\nprint('err', file=sys.stderr)\nsys.exit(3)",
        ["-c"],
        env={},
        stdout=None,
        stderr=None,
        stdio=(stdin_r, out_w, err_w),
    )
    for fd in (stdin_r, out_w, err_w):
        os.close(fd)
    assert forks.wait(pid).code == 3
    with os.fdopen(out_r, "rb") as out, os.fdopen(err_r, "rb") as err:
        assert out.read() == b"in out\n"
        assert err.read() == b"err\n"
    with pytest.raises(ValueError, match="stderr"):
        forks.spawn("pass", ["-c"], env={}, stdout=None, stderr=tmp_path / "e", stdio=(0, 1, 2))
