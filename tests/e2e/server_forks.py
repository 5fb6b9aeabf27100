"""The workbench pool's Retrace servers, forked from one process that imported the server once.

Every workbench launch of the pool starts a Retrace server (``<retrace.pythonPath> -I -m retrace
serve``); a cold one spends ~3 CPU-seconds importing the server and the model SDK before it does
anything — a fifth of a launch's fixed cost. The pool (``run-workbenches.mjs``) starts this
service once and points ``retrace.pythonPath`` at a launcher it writes (:func:`launcher_text`): a
small Python script that hands this service its standard streams, its hand-off descriptors (the
key's pipe, as the extension passes it), its environment and working directory; the service forks
the server from the server tests' fork server (``tests/server_forkserver.py``: the same preload,
warm caches included) with exactly those, then forwards the launcher's signals to the fork,
kills the fork when the launcher dies (the scenarios that kill "the server" kill the launcher,
the process the extension spawned) and reports the fork's exit for the launcher to exit with.

Any other command line (the extension's interpreter probes, ``-I -c ...``) is executed by the
real interpreter unchanged. The install scenario has no ``retrace.pythonPath`` (it builds the
packaged environment), and a scenario run on its own (``node tests/e2e/undo.mjs``) starts cold
servers as before.

Usage: ``python -m tests.e2e.server_forks SOCKET LAUNCHER`` (from the repository's root) —
writes the launcher, listens on ``SOCKET``, prints ``ready`` and serves until stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import sys
import threading
from pathlib import Path

from tests import cli_forkserver, server_forkserver

SERVE = ["-I", "-m", "retrace", "serve"]
"""The command line the extension starts its server with (``SERVER_ARGS`` of serverEnv.ts)."""


def launcher_text(python: str, sock: str) -> str:
    """The ``retrace.pythonPath`` script: the server's start through the service, all else the
    real interpreter's."""
    return f"""#!{python} -IS
import json, os, signal, socket, sys
args = sys.argv[1:]
if args != {SERVE!r}:
    os.execv({python!r}, [{python!r}, *args])
handoff = sorted(
    k for k, v in os.environ.items() if k.startswith("RETRACE_") and k.endswith("_FD") and v.isdigit()
)
fds = [0, 1, 2, *(int(os.environ[k]) for k in handoff)]
channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
channel.connect({sock!r})
request = {{"env": dict(os.environ), "cwd": os.getcwd(), "handoff": handoff, "pid": os.getpid()}}
socket.send_fds(channel, [json.dumps(request).encode()], fds)
for fd in fds[3:]:
    os.close(fd)
def forward(sig, _frame):
    channel.send(json.dumps({{"signal": sig}}).encode())
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
while True:
    message = channel.recv(4096)
    if not message:
        os._exit(1)
    code = json.loads(message).get("exit")
    if code is not None:
        break
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
"""


def _serve_one(conn: socket.socket, forks: cli_forkserver.ForkServer) -> None:
    message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 32)
    request = json.loads(message)
    stdin, stdout, stderr, *passed = fds
    try:
        pid = forks.spawn(
            cli_forkserver.RUN_MODULE,
            ["-m", "serve"],
            env=request["env"],
            stdout=None,
            stderr=None,
            stdio=(stdin, stdout, stderr),
            handoff=dict(zip(request["handoff"], passed, strict=True)),
            cwd=Path(request["cwd"]),
        )
    finally:
        for fd in fds:
            os.close(fd)
    exited = threading.Event()

    def report() -> None:
        code = forks.wait(pid).code
        exited.set()
        with contextlib.suppress(OSError):
            conn.send(json.dumps({"exit": code}).encode())

    threading.Thread(target=report, daemon=True).start()
    while not exited.is_set():
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:  # the launcher is gone: so is its server
            if not exited.is_set():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            break
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(pid, int(json.loads(data)["signal"]))
    conn.close()


def main() -> None:
    sock, launcher = sys.argv[1], Path(sys.argv[2])
    forks = cli_forkserver.server(server_forkserver.PRELOAD)
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
            threading.Thread(target=_serve_one, args=(conn, forks), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the pool closes it (or exits)


if __name__ == "__main__":
    main()
