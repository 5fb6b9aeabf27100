"""The server's side of the relay: a Unix domain socket listener with a method table
(standard library only; what each method does is the caller's table).

:meth:`RelayServer.start` is called only by a process that HOLDS the store's writer lock, so a
socket already at the store's path is a dead server's (or a foreign one's, left alone): a
connection it refuses proves it stale, and it is replaced. Each connection is served on a thread
of its own (at most :data:`MAX_CONNECTIONS` at once; more are refused with a clear error), one
request per connection, read within :data:`READ_TIMEOUT_S`. A method is a callable taking the
request's parameters and the request's envelope (``store``, ``workspace``) and returning a JSON
object; :class:`MethodError` is a refusal with its code, anything else an internal error — the
listener keeps serving whatever one request did.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrace.relay import wire

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 16
READ_TIMEOUT_S = 10.0
"""How long a connected peer may take to send its request (a stuck peer holds a thread)."""


class MethodError(Exception):
    """A refusal a method raises: ``code`` (one of :mod:`retrace.relay.wire`'s), one-line message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Request:
    method: str
    params: dict[str, Any]
    store: str
    workspace: str | None


Method = Callable[[Request], dict[str, Any]]


def parse_request(line: bytes) -> Request:
    """The request a line holds; :class:`MethodError` (``invalidRequest``) for anything else."""
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise MethodError(wire.INVALID_REQUEST, f"the request is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise MethodError(wire.INVALID_REQUEST, "the request must be a JSON object")
    if raw.get("v") != wire.PROTOCOL:
        raise MethodError(
            wire.INVALID_REQUEST,
            f"unsupported relay protocol {raw.get('v')!r} (this server speaks {wire.PROTOCOL})",
        )
    method, params, store, workspace = (
        raw.get("method"),
        raw.get("params", {}),
        raw.get("store"),
        raw.get("workspace"),
    )
    if not isinstance(method, str) or not method:
        raise MethodError(wire.INVALID_REQUEST, "the request names no method")
    if not isinstance(params, dict):
        raise MethodError(wire.INVALID_PARAMS, f"params of {method} must be a JSON object")
    if not isinstance(store, str) or not store:
        raise MethodError(wire.INVALID_REQUEST, "the request names no store")
    if workspace is not None and not isinstance(workspace, str):
        raise MethodError(wire.INVALID_REQUEST, "workspace must be a path")
    return Request(method, params, store, workspace)


class RelayServer:
    """Listens for ``store_dir`` until :meth:`close`; ``methods``: name → :data:`Method`."""

    def __init__(self, store_dir: Path, methods: Mapping[str, Method]) -> None:
        self.store_dir = store_dir
        self.methods = dict(methods)
        self.path = wire.socket_path(store_dir)
        self._store_id = path_identity(store_dir)
        self._listener: socket.socket | None = None
        self._bound: tuple[int, int] | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    # ------------------------------------------------------------------ lifetime
    def start(self) -> None:
        """Bind and listen (:class:`wire.RelayUnavailableError` when the directory is not safely
        ours or another live process answers at the path)."""
        _private_dir(self.path.parent)
        _clear_stale(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(os.fspath(self.path))
            self.path.chmod(0o600)  # the 0700 directory already keeps others out meanwhile
            st = os.lstat(self.path)
            listener.listen(MAX_CONNECTIONS)
        except BaseException:
            listener.close()
            raise
        self._listener, self._bound = listener, (st.st_dev, st.st_ino)
        self._thread = threading.Thread(target=self._serve, name="retrace-relay", daemon=True)
        self._thread.start()
        log.info("relay listening on %s", self.path)

    def still_bound(self) -> bool:
        """Whether the socket file at :attr:`path` is still the one this server bound (someone
        may have removed the relay directory: then no client can reach this server)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return self._bound is not None and (st.st_dev, st.st_ino) == self._bound

    def drain(self, timeout: float) -> bool:
        """Wait until no connection is being served (their answers sent), at most ``timeout``
        seconds; whether it got there. For a process about to exit after :meth:`close`."""
        deadline = time.monotonic() + timeout
        taken = 0
        try:
            while taken < MAX_CONNECTIONS:
                if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    return False
                taken += 1
            return True
        finally:
            for _ in range(taken):
                self._slots.release()

    def close(self) -> None:
        """Stop listening and remove the socket (only if it is still ours). Idempotent;
        requests already running finish on their threads."""
        if self._closed.is_set():
            return
        self._closed.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(OSError):
                st = os.lstat(self.path)
                if (st.st_dev, st.st_ino) == self._bound:
                    self.path.unlink()
        self._wake_r.close()
        self._wake_w.close()

    # ------------------------------------------------------------------ serving
    def _serve(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._closed.is_set():
                for key, _ in sel.select():
                    if key.fileobj is self._listener and not self._closed.is_set():
                        self._accept()

    def _accept(self) -> None:
        assert self._listener is not None
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        if not self._slots.acquire(blocking=False):
            _answer(
                conn,
                wire.refusal(wire.INTERNAL, f"the server is busy ({MAX_CONNECTIONS} relay calls running)"),
            )
            conn.close()
            return
        threading.Thread(
            target=self._connection, args=(conn,), name="retrace-relay-call", daemon=True
        ).start()

    def _connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                _answer(conn, self.handle(conn))
        except Exception:
            log.exception("relay: serving a connection failed")
        finally:
            self._slots.release()

    def handle(self, conn: socket.socket) -> dict[str, Any]:
        """The answer to the one request ``conn`` carries."""
        uid = wire.peer_uid(conn)
        if uid is not None and uid != os.geteuid():
            log.warning("relay: refused a peer of uid %d", uid)
            return wire.refusal(wire.PEER_REFUSED, f"refused: uid {uid} is not the server's user")
        conn.settimeout(READ_TIMEOUT_S)
        try:
            line = wire.read_line(conn)
        except wire.TooLargeError as exc:
            return wire.refusal(wire.TOO_LARGE, f"the request is too large ({exc})")
        except (OSError, ConnectionError) as exc:
            return wire.refusal(wire.INVALID_REQUEST, f"no complete request: {exc}")
        try:
            request = parse_request(line)
            method = self.methods.get(request.method)
            if method is None:
                known = ", ".join(sorted(self.methods))
                raise MethodError(
                    wire.UNKNOWN_METHOD, f"unknown method {request.method[:100]!r} (known: {known})"
                )
            if path_identity(Path(request.store)) != self._store_id:
                raise MethodError(
                    wire.OTHER_STORE, f"this server holds {self.store_dir}, not {request.store}"
                )
            return {"ok": True, "result": method(request)}
        except MethodError as exc:
            return wire.refusal(exc.code, str(exc))
        except Exception as exc:
            log.exception("relay: %s failed", line[:100])
            return wire.refusal(wire.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


def _answer(conn: socket.socket, answer: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the peer may be gone (timed out): nothing to tell it
        conn.sendall(wire.encode(answer))


def path_identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path`` (following links), ``None`` when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _private_dir(path: Path) -> None:
    """Create the relay directory 0700 when missing; then it must be ours and private."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=False)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask
    wire.check_private_dir(path)


def _clear_stale(path: Path) -> None:
    """Remove what a dead server left at ``path``. Called only by the lock holder: a socket no
    one answers on is stale. One that answers belongs to a live process of another store (the
    hash collided): left alone, and this server does without a relay."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(st.st_mode):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(1.0)
            probe.connect(os.fspath(path))
        except OSError:
            pass  # refused: stale
        else:
            raise wire.RelayUnavailableError(f"another live process listens on {path}")
        finally:
            probe.close()
    path.unlink()
