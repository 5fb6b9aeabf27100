"""Run the ``retrace`` CLI as a real child process without paying its start-up every call.

The CLI tests and the data-safety campaigns start thousands of ``retrace <command>`` processes;
each cold process spends ~0.25 CPU-seconds importing (the engine, pydantic) before the command
runs, most of the CPU those tests use on a 2-core machine. Here one helper process per test
process (a *fork server*) imports the CLI's modules once; every command is a ``fork`` of it that
then runs exactly what a cold process runs after its imports: ``sys.argv``, the environment, the
working directory and the three standard streams set as the caller asked, the caller's code as
``__main__`` (the console script's two lines, or the campaigns' peak-RSS wrapper), ``SystemExit``
turned into the exit code the way the interpreter does, a traceback printed for anything else,
the ``atexit`` functions run, then ``os._exit``.

What a cold process would see and a forked one does not: the interpreter's own start-up and the
imports themselves (``tests/cli/test_import_hygiene.py`` and every other CLI test that starts
``python -m retrace`` or the console script directly keep covering those). Nothing in
``retrace`` reads the environment or the working directory at import time (module bodies hold
constants only), so a command forked with an environment behaves as a cold one started with it.

Each fork is a child of the fork server, not of the test: :meth:`ForkServer.spawn` returns its
pid (``os.kill`` works on it as on any process of ours) and :meth:`ForkServer.wait` its exit
status and peak RSS (``wait4`` in the fork server, reported back). ``RETRACE_TEST_FORK_CLI=0``
runs every command as a cold process instead (:func:`enabled`), to compare or to rule the fork
server out.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

PRELOAD = (
    "retrace.cli.main",
    "retrace.cli.parser",
    "retrace.cli.commands",
    "retrace.cli.format",
    "retrace.cli.errors",
    "retrace.app.restore_sequence",
    "retrace.agent.session",
    "retrace.agent.headless",
)
"""What every CLI command imports before it does anything, and what ``retrace restore`` imports
on top (the restore sequence and the headless agent service that restores the conversation:
~120 modules, ~0.2 CPU-seconds, in every restore of the campaigns); the fork server imports them
once. An entry ``module:function`` also calls that function once after the import: a cache it
fills (the SDK's TLS context, the JSON-RPC converter) is then every fork's from the start."""

RUN_MODULE = "import runpy\nrunpy.run_module('retrace', run_name='__main__', alter_sys=True)\n"
"""What ``python -m retrace`` runs after the interpreter starts (a fork runs it with ``sys.argv``
set to ``["-m", <command>, ...]``)."""

_SERVER = r"""
import atexit, builtins, json, os, select, signal, socket, sys, traceback, types

import importlib

for name in sys.argv[1:]:
    module, _, warm = name.partition(":")
    loaded = importlib.import_module(module)
    if warm:
        getattr(loaded, warm)()

channel = socket.socket(fileno=int(os.environ.pop("RETRACE_FORK_CHANNEL")))

proto_in = os.dup(0)
proto_out = os.dup(1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)


def reply(message):
    os.write(proto_out, (json.dumps(message) + "\n").encode())


def exit_code(exc):
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def child(request, passed):
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    channel.close()
    for fd in (proto_in, proto_out, wake_r, wake_w, null):
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # Hand-off descriptors (a secret's pipe, as the extension passes the key) keep the number
    # they arrived on; the variable that names them is set for the command to find.
    given = request.get("streams", 2)
    for name, fd in zip(request.get("handoff", []), passed[given:]):
        os.environ[name] = str(fd)
    if passed:  # the caller's pipes as stdin and stdout (a server's JSON-RPC streams), maybe stderr
        for target, fd in enumerate(passed[:given]):
            os.dup2(fd, target)
        for fd in passed[:given]:
            os.close(fd)
        streams = [] if given == 3 else [(2, request["stderr"], os.O_WRONLY)]
    else:
        streams = [
            (0, request.get("stdin") or os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY),
            (2, request["stderr"], os.O_WRONLY),
        ]
    for fd, path, flags in streams:
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = list(request["argv"])
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    try:
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
        code = 0
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def reap():
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reply({"exited": pid, "status": status, "maxrss": usage.ru_maxrss})


pending = b""
reply({"ready": os.getpid()})
while True:
    try:
        readable, _, _ = select.select([proto_in, wake_r], [], [])
    except InterruptedError:
        continue
    if wake_r in readable:
        os.read(wake_r, 4096)
        reap()
    if proto_in in readable:
        data = os.read(proto_in, 65536)
        if not data:
            break
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            passed = []
            if request.get("fds"):
                count = request.get("streams", 2) + len(request.get("handoff", []))
                _, passed, _, _ = socket.recv_fds(channel, 1, count)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                child(request, passed)
            for fd in passed:
                os.close(fd)
            reply({"spawned": request["id"], "pid": pid})
    reap()
"""


def enabled() -> bool:
    """Commands go through the fork server unless ``RETRACE_TEST_FORK_CLI=0``."""
    return os.environ.get("RETRACE_TEST_FORK_CLI", "1") != "0"


@dataclass
class Exit:
    status: int
    """The wait status (``os.waitstatus_to_exitcode`` turns it into a return code)."""
    maxrss_kb: int

    @property
    def code(self) -> int:
        return os.waitstatus_to_exitcode(self.status)


@dataclass
class Ran:
    """A command :meth:`ForkServer.run` ran to its end: its exit, its captured output, and whether
    it was killed for running past its timeout."""

    exit: Exit
    stdout: bytes
    stderr: bytes
    killed: bool


class ForkServer:
    """One fork server process; thread-safe (commands may run side by side)."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        # The channel on which a spawn hands the fork server descriptors (SCM_RIGHTS).
        self._channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parent,
            pass_fds=(theirs.fileno(),),
            env={**os.environ, "RETRACE_FORK_CHANNEL": str(theirs.fileno())},
        )
        theirs.close()
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in = self._proc.stdin
        self._out = self._proc.stdout
        ready = json.loads(self._out.readline() or b"{}")
        if "ready" not in ready:
            raise RuntimeError(f"the CLI fork server did not start (exit {self._proc.wait()})")
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._next_id = 0
        self._spawned: dict[int, int] = {}
        self._exited: dict[int, Exit] = {}
        self._closed = False
        threading.Thread(target=self._read, name="cli-fork-server", daemon=True).start()

    def _read(self) -> None:
        for line in self._out:
            message = json.loads(line)
            with self._changed:
                if "spawned" in message:
                    self._spawned[int(message["spawned"])] = int(message["pid"])
                elif "exited" in message:
                    self._exited[int(message["exited"])] = Exit(
                        int(message["status"]), int(message["maxrss"])
                    )
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def spawn(
        self,
        code: str,
        argv: list[str],
        *,
        env: dict[str, str],
        stdout: Path | None,
        stderr: Path | None,
        stdio: tuple[int, int] | tuple[int, int, int] | None = None,
        handoff: dict[str, int] | None = None,
        stdin: Path | None = None,
        cwd: Path | None = None,
    ) -> int:
        """Fork a command: ``code`` runs as ``__main__`` with ``sys.argv = argv``, ``env`` as its whole
        environment, ``cwd`` (default: the caller's) as its working directory, stdin from ``stdin``
        (an existing file; default the null device) and stdout / stderr written to those (existing)
        files; or, with ``stdio`` (two or three descriptors of the caller: the command's stdin,
        stdout and maybe stderr, e.g. pipe ends; the caller still closes its copies), those as its
        standard streams (``stderr`` then ``None``); with ``handoff`` (only beside ``stdio``:
        variable name → a descriptor of the caller, e.g. a secret's pipe), each descriptor passed
        on, open, under the variable.
        Returns its pid."""
        handoff = handoff or {}
        if handoff and stdio is None:
            raise ValueError("hand-off descriptors travel beside stdio only")
        if (stderr is None) != (stdio is not None and len(stdio) == 3):
            raise ValueError("stderr is a file, or the third descriptor of stdio")
        with self._changed:
            request_id = self._next_id
            self._next_id += 1
            request = {
                "id": request_id,
                "code": code,
                "argv": argv,
                "env": env,
                "cwd": str(cwd) if cwd is not None else os.getcwd(),
                "stdin": str(stdin) if stdin is not None else None,
                "stdout": str(stdout) if stdout is not None else None,
                "stderr": str(stderr) if stderr is not None else None,
                "fds": stdio is not None,
                "streams": len(stdio) if stdio is not None else 0,
                "handoff": list(handoff),
            }
            if stdio is not None:
                socket.send_fds(self._channel, [b"f"], [*stdio, *handoff.values()])
            self._in.write((json.dumps(request) + "\n").encode())
            self._in.flush()
            while request_id not in self._spawned:
                if self._closed:
                    raise RuntimeError("the CLI fork server exited")
                self._changed.wait()
            return self._spawned.pop(request_id)

    def wait(self, pid: int) -> Exit:
        """The exit of a command :meth:`spawn` started (blocks until it ends)."""
        with self._changed:
            while pid not in self._exited:
                if self._closed:
                    raise RuntimeError("the CLI fork server exited")
                self._changed.wait()
            return self._exited.pop(pid)

    def run(
        self,
        code: str,
        argv: list[str],
        *,
        env: dict[str, str],
        timeout: float,
        input: bytes | None = None,
        cwd: Path | None = None,
    ) -> Ran:
        """:meth:`spawn` a command with stdin holding ``input`` (default: the null device) and
        stdout / stderr captured, killed (``SIGKILL``) after ``timeout`` seconds; wait for it. THE
        fork path of every helper that runs the CLI (``tests/cli/cli_support.py``,
        ``tests/reliability/cli_support.py``)."""
        with tempfile.TemporaryDirectory(prefix="retrace-cli-") as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            out.touch()
            err.touch()
            given = None
            if input is not None:
                given = Path(tmp, "in")
                given.write_bytes(input)
            pid = self.spawn(code, argv, env=env, stdout=out, stderr=err, stdin=given, cwd=cwd)
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                exited = self.wait(pid)
            finally:
                timer.cancel()
            return Ran(exited, out.read_bytes(), err.read_bytes(), killed.is_set())

    def exited(self, pid: int) -> Exit | None:
        """The exit of ``pid`` if it has ended (taken: a second call says ``None``), else ``None``."""
        with self._changed:
            return self._exited.pop(pid, None)

    @property
    def closed(self) -> bool:
        """Whether the fork server has exited (a new one is needed)."""
        return self._closed

    def close(self) -> None:
        self._in.close()
        self._proc.wait()
        self._channel.close()


_servers: dict[tuple[str, ...], ForkServer] = {}
_server_lock = threading.Lock()


def server(preload: tuple[str, ...] = PRELOAD) -> ForkServer:
    """This process's fork server with ``preload`` imported (the CLI's modules by default; the
    server tests and the MCP tests name their own), started on first use, stopped when the
    process exits."""
    with _server_lock:
        forks = _servers.get(preload)
        if forks is None or forks.closed:
            forks = _servers[preload] = ForkServer(preload)
            atexit.register(forks.close)
        return forks
