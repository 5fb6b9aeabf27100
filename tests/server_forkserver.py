"""Start ``python -m retrace serve`` for the server tests without paying its imports each time.

A server test starts a real server process; a cold one spends about a CPU-second importing
(pygls, ``lsprotocol.types``, the engine, pydantic models) and, once it has started, imports the
model SDK in the background (``warm_sdk``: seconds more) — most of the CPU the server tests use
on a 2-core machine. Here a fork server per test process (``tests/cli_forkserver.py``, with the
server's modules preloaded) forks each server: the child gets the test's pipes as stdin and
stdout and runs exactly what ``python -m retrace serve`` runs after its imports. It is a real
process with its own pid (``os.kill`` works on it; the crash tests kill it), speaking JSON-RPC
over real pipes; its stderr goes to a file that is copied to the test's stderr when it exits.

A model key in the environment the test asks for (``model_env``: most agent tests) is handed to
the forked server the way the VS Code extension hands it over: on an inherited pipe named by
``RETRACE_API_KEY_FD`` (each secret of ``credentials.SECRETS`` by its own variable). A cold
server given the key in its environment would re-execute itself to move it onto such a pipe
(cold start, imports and the SDK twice); ``tests/safety/test_security.py`` and
``tests/reliability/test_secrets.py`` start real cold servers with the key in the environment,
so that path stays covered, as do ``tests/lsp/test_serve_imports.py`` and the version-handshake
test for the interpreter's own start-up and the imports. ``RETRACE_TEST_FORK_CLI=0`` starts
every server cold.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tests import cli_forkserver

from retrace.credentials import SECRETS

PRELOAD = (
    "retrace.cli.main",
    "retrace.cli.commands",
    "retrace.lsp.main",
    "retrace.lsp.handlers",
    "retrace.bootstrap",
    "retrace.offline",
    "anthropic",
    "openai",
    "retrace.agent.runtime:warm_sdk",
    "retrace.lsp.rpc:converter_factory",
)
"""What a server imports on the way to answering its first requests (the SDK included: the
server imports it in the background after start-up, with ``warm_sdk``, which also builds the TLS
context its clients share), and the JSON-RPC converter every server of a process shares."""


_PYTHON = sys.executable
"""The interpreter the fork server runs: a test that swaps ``sys.executable`` for a wrapper (e.g.
one that starts the server as another user) gets a cold start through that wrapper."""


def usable(args: tuple[str, ...]) -> bool:
    """Whether a server with ``args`` may be forked (else it starts cold): ``serve`` only, under
    the interpreter the fork server runs (a test that swaps ``sys.executable`` starts cold). Any
    environment works: its secrets are handed over on pipes (see :func:`_handoff_pipes`)."""
    return cli_forkserver.enabled() and args == ("serve",) and sys.executable == _PYTHON


def _handoff_pipes(env: dict[str, str]) -> dict[str, int]:
    """Take each secret out of ``env`` (in place) onto a pipe of its own, written and closed:
    the hand-off variable → the read end (the caller closes it once passed on)."""
    pipes: dict[str, int] = {}
    for name, fd_var in SECRETS.items():
        value = env.pop(name, "")
        if not value:
            continue
        read_end, write_end = os.pipe()
        os.write(write_end, value.encode("utf-8"))
        os.close(write_end)
        pipes[fd_var] = read_end
    return pipes


class ForkedServer:
    """A forked server as ``asyncio.subprocess.Process`` looks to the JSON-RPC client: ``pid``,
    ``returncode``, ``wait()``, ``terminate()``, ``kill()``; ``stderr`` is ``None`` (a file)."""

    stderr = None

    def __init__(self, pid: int, forks: cli_forkserver.ForkServer, err: Path) -> None:
        self.pid = pid
        self.returncode: int | None = None
        loop = asyncio.get_running_loop()
        self._done: asyncio.Future[int] = loop.create_future()

        def reap() -> None:
            code = forks.wait(pid).code
            with contextlib.suppress(OSError):
                sys.stderr.write(err.read_text("utf-8", "replace"))
                err.unlink()
                err.parent.rmdir()
            loop.call_soon_threadsafe(self._finish, code)

        threading.Thread(target=reap, name=f"reap-server-{pid}", daemon=True).start()

    def _finish(self, code: int) -> None:
        self.returncode = code
        if not self._done.done():
            self._done.set_result(code)

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


async def start_forked_io(client: Any, args: tuple[str, ...], env: dict[str, str]) -> None:
    """What ``client.start_io(sys.executable, "-m", "retrace", *args, env=env)`` does, with the
    server forked from the fork server instead of started cold."""
    from pygls.io_ import run_async

    forks = cli_forkserver.server(PRELOAD)
    err = Path(tempfile.mkdtemp(prefix="retrace-server-")) / "stderr"
    err.touch()
    env = dict(env)
    handoff = _handoff_pipes(env)
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    try:
        pid = await asyncio.to_thread(
            forks.spawn,
            cli_forkserver.RUN_MODULE,
            ["-m", *args],
            env=env,
            stdout=None,
            stderr=err,
            stdio=(to_server_r, from_server_w),
            handoff=handoff,
        )
    finally:
        for fd in (to_server_r, from_server_w, *handoff.values()):
            os.close(fd)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    # Pipe ends wrapped as file objects (no I/O here): the transports own and close them.
    from_server = os.fdopen(from_server_r, "rb", 0)
    to_server = os.fdopen(to_server_w, "wb", 0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), from_server)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), to_server
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    server = ForkedServer(pid, forks, err)
    # The rest of pygls' JsonRPCClient.start_io, over these pipes.
    client.protocol.set_writer(writer)
    connection = asyncio.create_task(
        run_async(
            stop_event=client._stop_event,
            reader=reader,
            protocol=client.protocol,
            logger=None,
            error_handler=client.report_server_error,
        )
    )
    client._server = server
    client._async_tasks.extend([connection, asyncio.create_task(client._server_exit())])
