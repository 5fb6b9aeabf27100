"""The workbench pool's Retrace servers, forked from one process that imported the server once.

Every workbench launch of the pool starts a Retrace server (``<retrace.pythonPath> -I -m retrace
serve``); a cold one spends ~3 CPU-seconds importing the server and the model SDK before it does
anything — a fifth of a launch's fixed cost. The pool (``run-workbenches.mjs``) starts this
service once and points ``retrace.pythonPath`` at a launcher it writes (:func:`launcher_text`): a
small Python script that asks this service for a server forked from the server tests' fork server
(``tests/server_forkserver.py``: the same preload, warm caches included) with its environment,
working directory and hand-off descriptors (the key's pipe, as the extension passes it).

The contract: seen from the extension, the launcher IS the server, including how it dies.
  - The server's standard streams are pipes the launcher pumps to and from its own. So when the
    launcher is killed (the scenarios that kill "the server" kill the process the extension
    spawned), the extension's pipes close at that instant, exactly as a killed server's would.
  - The server itself sees nothing of that death: this service holds the far end of each of its
    pipes (no end-of-file on stdin, no broken stdout), kills it the moment the launcher's socket
    closes, and starts no new server before every server whose launcher has died is reaped. A
    server whose launcher died never runs on to a graceful shutdown, a journal write or a held
    store lock that the restarted server could see (a first version passed the fork the
    launcher's own streams; once, under load, the old server was still alive to answer the
    extension's clean stop while the new one started).
  - SIGTERM, SIGINT and SIGHUP to the launcher are forwarded; end-of-file on the launcher's stdin
    is passed on; the server's exit (code or signal) is the launcher's.

Any other command line (the extension's interpreter probes, ``-I -c ...``) is executed by the real
interpreter unchanged. The install scenario has no ``retrace.pythonPath`` (it builds the packaged
environment), and a scenario run on its own (``node tests/e2e/undo.mjs``) starts cold servers.

Usage: ``python -m tests.e2e.server_forks SOCKET LAUNCHER`` (from the repository's root) —
writes the launcher, listens on ``SOCKET``, prints ``ready`` and serves until stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests import cli_forkserver, server_forkserver

SERVE = ["-I", "-m", "retrace", "serve"]
"""The command line the extension starts its server with (``SERVER_ARGS`` of serverEnv.ts)."""

HELD = 3
"""The last descriptors of a request: the far ends of the server's three pipes, for the service to
hold (stdin's write end, stdout's and stderr's read ends)."""

_LAUNCHER = r"""
import json, os, select, signal, socket, sys
args = sys.argv[1:]
if args != SERVE:
    os.execv(PYTHON, [PYTHON, *args])
handoff = sorted(
    k for k, v in os.environ.items() if k.startswith("RETRACE_") and k.endswith("_FD") and v.isdigit()
)
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
err_r, err_w = os.pipe()
ours = [in_r, out_w, err_w, *(int(os.environ[k]) for k in handoff)]
channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
channel.connect(SOCK)
request = {"env": dict(os.environ), "cwd": os.getcwd(), "handoff": handoff}
socket.send_fds(channel, [json.dumps(request).encode()], [*ours, in_w, out_r, err_r])
for fd in ours:
    os.close(fd)
def forward(sig, _frame):
    channel.send(json.dumps({"signal": sig}).encode())
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
route = {0: in_w, out_r: 1, err_r: 2}
pending = {in_w: bytearray(), 1: bytearray(), 2: bytearray()}
for fd in pending:
    os.set_blocking(fd, False)
code = None
stdin_open = True
while True:
    reads = [fd for fd, to in route.items() if len(pending[to]) < 1 << 20]
    writes = [fd for fd, data in pending.items() if data]
    if code is not None and out_r not in route and err_r not in route and not writes:
        break
    readable, writable, _ = select.select([*reads, channel], writes, [], None if code is None else 2)
    if code is not None and not readable and not writable:
        break  # the server is gone; a child of it still holds its output open
    for fd in writable:
        try:
            del pending[fd][: os.write(fd, pending[fd])]
        except BlockingIOError:
            pass
        except OSError:
            pending[fd].clear()
    for fd in readable:
        if fd is channel:
            message = channel.recv(4096)
            if not message:
                os._exit(1)
            code = json.loads(message)["exit"]
            continue
        data = os.read(fd, 1 << 16)
        if data:
            pending[route[fd]] += data
        else:
            del route[fd]
    if stdin_open and 0 not in route and not pending[in_w]:
        stdin_open = False
        os.close(in_w)
        del pending[in_w]
        channel.send(json.dumps({"stdin": "closed"}).encode())
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
"""


def launcher_text(python: str, sock: str) -> str:
    """The ``retrace.pythonPath`` script: the server's start through the service, all else the
    real interpreter's."""
    head = f"#!{python} -IS\nPYTHON = {python!r}\nSOCK = {sock!r}\nSERVE = {SERVE!r}\n"
    return head + _LAUNCHER


@dataclass(eq=False)
class _Server:
    """One forked server: its pid, its launcher's pidfd, the far ends of its pipes (closed once it
    is reaped), and whether it has been reaped."""

    pid: int
    launcher: int
    stdin: int | None
    """The write end of the server's stdin, until the launcher's stdin ends."""
    outputs: tuple[int, int]
    """The read ends of the server's stdout and stderr."""
    reaped: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kill(self) -> None:
        with self.lock:
            if not self.reaped.is_set():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)

    def release(self) -> None:
        with self.lock:
            self.reaped.set()
            for fd in (*self.outputs, self.launcher):
                os.close(fd)
            self.close_stdin()

    def close_stdin(self) -> None:
        """The launcher's stdin ended (or the server was reaped): the held write end is closed,
        once."""
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def launcher_gone(self) -> bool:
        with self.lock:
            return not self.reaped.is_set() and bool(select.select([self.launcher], [], [], 0)[0])


class _Service:
    def __init__(self) -> None:
        self.forks = cli_forkserver.server(server_forkserver.PRELOAD)
        self.servers: set[_Server] = set()
        self.lock = threading.Lock()

    def _settle(self) -> None:
        """Every server whose launcher has died is killed and reaped before a new one starts."""
        with self.lock:
            orphans = [s for s in self.servers if s.launcher_gone()]
        for server in orphans:
            server.kill()
            server.reaped.wait(30)

    def serve_one(self, conn: socket.socket) -> None:
        message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 64)
        request = json.loads(message)
        pid_of_launcher = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        streams, handoff, held = fds[:3], fds[3:-HELD], fds[-HELD:]
        self._settle()
        try:
            pid = self.forks.spawn(
                cli_forkserver.RUN_MODULE,
                ["-m", "serve"],
                env=request["env"],
                stdout=None,
                stderr=None,
                stdio=(streams[0], streams[1], streams[2]),
                handoff=dict(zip(request["handoff"], handoff, strict=True)),
                cwd=Path(request["cwd"]),
            )
        finally:
            for fd in (*streams, *handoff):
                os.close(fd)
        server = _Server(pid, os.pidfd_open(pid_of_launcher), held[0], (held[1], held[2]))
        with self.lock:
            self.servers.add(server)
        threading.Thread(target=self._report, args=(conn, server), daemon=True).start()
        self._follow(conn, server)

    def _report(self, conn: socket.socket, server: _Server) -> None:
        code = self.forks.wait(server.pid).code
        server.release()
        with self.lock:
            self.servers.discard(server)
        with contextlib.suppress(OSError):
            conn.send(json.dumps({"exit": code}).encode())

    def _follow(self, conn: socket.socket, server: _Server) -> None:
        """The launcher's messages until it exits: signals to forward, its stdin's end."""
        while not server.reaped.is_set():
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:  # the launcher is gone: so is its server
                server.kill()
                break
            message = json.loads(data)
            if "signal" in message:
                with server.lock:
                    if not server.reaped.is_set():
                        with contextlib.suppress(ProcessLookupError, ValueError):
                            os.kill(server.pid, int(message["signal"]))
            elif message.get("stdin") == "closed":
                with server.lock:
                    server.close_stdin()
        server.reaped.wait(30)
        conn.close()


def main() -> None:
    sock, launcher = sys.argv[1], Path(sys.argv[2])
    service = _Service()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sock)
    listener.listen(64)
    launcher.write_text(launcher_text(sys.executable, sock), "utf-8")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=service.serve_one, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the pool closes it (or exits)


if __name__ == "__main__":
    main()
