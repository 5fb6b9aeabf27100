"""A loopback HTTP proxy in front of a real S3 server that injects faults, per request, by script.

Tests (and ``bench/remote_latency.py``) point a remote's endpoint at the proxy instead of at
``rclone serve s3``; every request is forwarded unchanged (the ``Host`` header too, so the
client's signature still verifies) unless a :class:`Rule` matches it first:

* ``Fail(status)`` — answer with an S3-style error (500 by default) without forwarding;
* ``Delay(seconds)`` — wait, then forward (a slow remote);
* ``Drop(after_forward=False)`` — close the connection without an answer; with
  ``after_forward=True`` the request reaches the server first (it did the work, the answer is
  lost: the case where a retried PUT must not duplicate anything).

Rules are checked in order; a rule applies ``times`` times (``None``: until removed). Every request
is logged (:attr:`FaultProxy.log`) with what was done to it, so tests can count PUTs per key.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}


@dataclass(frozen=True)
class Fail:
    status: int = 500


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Drop:
    after_forward: bool = False


Action = Fail | Delay | Drop


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    """Path and query as sent (``/bucket/prefix/key?x-id=PutObject``)."""


@dataclass
class Rule:
    action: Action
    method: str | None = None
    path: str | None = None
    """A regular expression searched in the request path (``None``: any path)."""
    times: int | None = None
    when: Callable[[Request], bool] | None = None

    def matches(self, req: Request) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.method is not None and req.method != self.method:
            return False
        if self.path is not None and not re.search(self.path, req.path):
            return False
        return self.when is None or self.when(req)


@dataclass
class Logged:
    method: str
    path: str
    outcome: str
    """``forwarded <status>``, ``fail <status>``, ``drop``, ``drop-after <status>``, ``error``."""
    seconds: float


@dataclass
class FaultProxy:
    upstream_port: int
    upstream_host: str = "127.0.0.1"
    rules: list[Rule] = field(default_factory=list)
    log: list[Logged] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ------------------------------------------------------------------ scripting

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def fail(
        self,
        times: int | None = None,
        *,
        status: int = 500,
        method: str | None = None,
        path: str | None = None,
    ) -> Rule:
        return self.add(Rule(Fail(status), method=method, path=path, times=times))

    def delay(self, seconds: float, *, method: str | None = None, path: str | None = None) -> Rule:
        return self.add(Rule(Delay(seconds), method=method, path=path))

    def drop(
        self,
        times: int | None = None,
        *,
        after_forward: bool = False,
        method: str | None = None,
        path: str | None = None,
    ) -> Rule:
        return self.add(Rule(Drop(after_forward), method=method, path=path, times=times))

    def down(self) -> Rule:
        """Every request gets a 503 until :meth:`clear`."""
        return self.fail(status=503)

    def choose(self, req: Request) -> Action | None:
        with self._lock:
            for rule in self.rules:
                if rule.matches(req):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule.action
        return None

    def record(self, entry: Logged) -> None:
        with self._lock:
            self.log.append(entry)

    def count(self, method: str, path: str | None = None, outcome: str | None = None) -> int:
        with self._lock:
            return sum(
                1
                for e in self.log
                if e.method == method
                and (path is None or re.search(path, e.path))
                and (outcome is None or e.outcome.startswith(outcome))
            )


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"
    _upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        started = time.monotonic()
        body = self._read_body()
        req = Request(self.command, self.path)
        action = self.owner.choose(req)

        def record(outcome: str) -> None:  # before answering: the client may look right after
            self.owner.record(Logged(req.method, req.path, outcome, time.monotonic() - started))

        if isinstance(action, Fail):
            record(f"fail {action.status}")
            self._send_error(action.status)
            return
        if isinstance(action, Drop) and not action.after_forward:
            record("drop")
            self._drop()
            return
        if isinstance(action, Delay):
            time.sleep(action.seconds)
        try:
            status, headers, data = self._forward(body)
        except OSError:
            record("error")
            self._send_error(502)
            return
        if isinstance(action, Drop):
            record(f"drop-after {status}")
            self._drop()
        else:
            record(f"forwarded {status}")
            self._send(status, headers, data)

    def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        for attempt in (0, 1):
            conn = self._upstream
            if conn is None:
                conn = http.client.HTTPConnection(
                    self.owner.upstream_host, self.owner.upstream_port, timeout=60
                )
                self._upstream = conn
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in self.headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        conn.putheader(k, v)
                if (body or self.command in ("PUT", "POST")) and "Content-Length" not in self.headers:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body if body else None)
                resp = conn.getresponse()
                data = resp.read()
                headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
                return resp.status, headers, data
            except (OSError, http.client.HTTPException):
                conn.close()
                self._upstream = None
                if attempt:
                    raise OSError("upstream unreachable") from None
        raise OSError("upstream unreachable")

    def _send(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response_only(status)
        has_length = False
        for k, v in headers:
            has_length = has_length or k.lower() == "content-length"
            self.send_header(k, v)
        if not has_length:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int) -> None:
        body = (
            '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
            f"<Message>injected {status}</Message></Error>"
        ).encode()
        self._send(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))], body)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
