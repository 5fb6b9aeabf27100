"""The workbench pool's server launcher (``tests/e2e/server_forks.py``) behaves as the server it
stands for, seen from the process that started it (the extension).

The pool points ``retrace.pythonPath`` at the launcher, so every UI scenario relies on it: a
server started through it must answer JSON-RPC on the launcher's stdin/stdout, log to its
stderr, read the key from the pipe the extension hands over, end when the launcher is told to,
die when the launcher is killed (the scenarios that kill "the server" kill the launcher) without
running on to anything of its own meanwhile (it sees no end of its input), and report its exit as
the launcher's; a server started after a launcher died starts after that launcher's server is
gone. Anything but the server's own command line runs the real
interpreter. Also: the fork server takes a command's stderr as a third descriptor.
"""

from __future__ import annotations

import contextlib
import os
import select
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
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """The service's launcher and the service's pid."""
    where = tmp_path_factory.mktemp("server-forks")
    path = where / "python"
    service = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.server_forks", str(where / "socket"), str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert service.stdout is not None and service.stdout.readline() == b"ready\n"
    yield path, service.pid
    assert service.stdin is not None
    service.stdin.close()
    service.wait(timeout=30)


@pytest.fixture
def launcher(service: tuple[Path, int]) -> Path:
    return service[0]


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


def _cmdline(pid: int | str) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def _server_of(launcher_pid: int, workspace: Path) -> int:
    """The forked server serving the launcher: the process working in the workspace that is a
    fork of the fork server — its command line is its parent's, and its parent works elsewhere.
    (Not the launcher; not a process the server started, such as a ``git`` it runs there or a
    helper it detaches: their command lines are their own, or their parent works there too.)"""
    where = workspace.resolve()

    def works_in(pid: int | str) -> bool:
        try:
            return Path(os.readlink(f"/proc/{pid}/cwd")) == where
        except OSError:
            return False

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == launcher_pid or not works_in(entry.name):
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent != launcher_pid and not works_in(parent) and _cmdline(parent) == _cmdline(entry.name):
                return int(entry.name)
        time.sleep(0.05)
    raise AssertionError("no forked server found")


def _serving(launcher: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A launcher started on a fresh workspace, its server initialized: the launcher and the
    server's pid."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _start(launcher, workspace)
    assert "result" in _initialize(proc, workspace, tmp_path / "store")
    return proc, _server_of(proc.pid, workspace)


def _ends_within(fd: int, seconds: float) -> bool:
    """Whether the stream on ``fd`` reaches its end within ``seconds`` (what is left is read)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0] and os.read(fd, 1 << 16) == b"":
            return True
    return False


def _wait_stopped(pid: int) -> None:
    """Until every thread of ``pid`` is stopped: a stop signal takes effect asynchronously (a
    thread of the service waking on the launcher's death could still act on it before)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in ("T", "t") for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop")


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _gone(pid)


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie its parent has not reaped yet)."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


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
        assert _gone(server)
    finally:
        proc.kill()


def test_killing_the_launcher_kills_its_server(launcher: Path, tmp_path: Path) -> None:
    proc, server = _serving(launcher, tmp_path)
    try:
        proc.kill()
        proc.wait(timeout=30)
        assert _gone_within(server, 30), "the server outlived its launcher"
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


def test_a_killed_launchers_server_sees_nothing_of_it_and_dies_by_the_service(
    service: tuple[Path, int], tmp_path: Path
) -> None:
    """The extension closes the killed launcher's pipes at once; the server must not see its input
    end (a cold server killed by SIGKILL never runs on to a shutdown of its own): with the service
    held still, the server waits; once the service runs, the server is killed."""
    launcher, service_pid = service
    proc, server = _serving(launcher, tmp_path)
    try:
        os.kill(service_pid, signal.SIGSTOP)
        _wait_stopped(service_pid)
        try:
            proc.kill()
            proc.wait(timeout=30)
            assert proc.stdin is not None and proc.stdout is not None
            assert _ends_within(proc.stdout.fileno(), 10), "the launcher's output ends with it"
            proc.stdin.close()
            time.sleep(1.0)
            assert not _gone(server), "the server saw its launcher's death and ended on its own"
        finally:
            os.kill(service_pid, signal.SIGCONT)
        assert _gone_within(server, 30), "the server outlived its launcher"
    finally:
        proc.kill()


def test_a_server_started_after_a_launcher_died_starts_after_its_server_is_gone(
    launcher: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = _start(launcher, workspace)
    second = None
    try:
        assert "result" in _initialize(first, workspace, tmp_path / "store")
        old = _server_of(first.pid, workspace)
        first.kill()
        first.wait(timeout=30)
        second = _start(launcher, workspace)
        assert "result" in _initialize(second, workspace, tmp_path / "store")
        assert _gone(old), "a new server answered while the dead launcher's server still ran"
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_output_larger_than_a_pipe_flows_both_ways(launcher: Path, tmp_path: Path) -> None:
    """The launcher pumps the server's streams: a request and replies far larger than a pipe's
    buffer pass whole, in both directions at once."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _start(launcher, workspace)
    try:
        assert "result" in _initialize(proc, workspace, tmp_path / "store")
        big = "x" * (3 << 20)
        for number in range(2, 5):
            send(proc, {"jsonrpc": "2.0", "id": number, "method": "retrace/nope", "params": {"pad": big}})
        answered: set[int] = set()
        while len(answered) < 3:
            message = read(proc)
            if message.get("id") in (2, 3, 4):
                assert "error" in message, message
                answered.add(message["id"])
    finally:
        proc.kill()
