"""Helpers of the "inputs" campaigns (hostile tool inputs, protocol fuzzing, model faults, secrets).

* :func:`scripted_model` starts the fake Messages API (real HTTP + SSE) from an inline scenario.
* :class:`RawServer` drives ONE real ``python -m retrace serve`` process with hand-framed
  JSON-RPC over its pipes (``Content-Length`` framing, like VS Code), much faster than a full
  client for thousands of requests. It answers the server's own requests (``workspace/configuration``
  with the given settings, a permission prompt with ``deny``, ``workspace/applyEdit`` with
  ``applied: false``, ``retrace/editor/*`` with empty results) so the server never waits for us, and
  captures the server's stderr (its log) to a file.
* :func:`store_digest` hashes a store directory (paths, sizes, contents) to prove rejected calls
  changed nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import jsonschema

from retrace.offline import FakeModel
from retrace.offline.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "shared-schema" / "protocol.schema.json").read_text("utf-8"))
METHODS = json.loads((ROOT / "shared-schema" / "methods.json").read_text("utf-8"))


def scripted_model(responses: list[dict[str, Any]], name: str = "reliability") -> FakeModel:
    model = FakeModel(Scenario.model_validate({"name": name, "responses": responses}))
    model.start()
    return model


def schema_validator(ref: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator({"$ref": ref, "$defs": SCHEMA["$defs"]})


def store_digest(store: Path) -> str:
    """Content hash of every file under ``store`` (lock files included: a rejected call must not
    even touch them), except ``cache/``: derived indexes (rebuilt from the journals when in
    doubt) that the server rewrites on its own schedule, from a background thread, whatever
    the client sends (hashing them raced that writer's temporary files)."""
    digest = hashlib.sha256()
    files = (p for p in store.rglob("*") if p.is_file() and p.relative_to(store).parts[0] != "cache")
    for path in sorted(files):
        digest.update(path.relative_to(store).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


class ServerGoneError(Exception):
    pass


class RawServer:
    """One real server process spoken to with raw framed JSON-RPC."""

    def __init__(
        self,
        workspace: Path,
        store: Path,
        *,
        env: dict[str, str],
        settings: dict[str, Any] | None = None,
        log_path: Path,
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.settings = settings or {}
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "retrace", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**os.environ, "RETRACE_LOG_LEVEL": "INFO", **env},
        )
        self._next_id = 0
        self._responses: dict[int | str, Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.orphans: list[dict[str, Any]] = []
        """Responses to no request of ours (answers to raw messages sent with ``send_raw``)."""
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ framing
    def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError) as e:
                raise ServerGoneError(f"server stdin closed: {e}") from e

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode("utf-8"))

    def _read_message(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise ValueError("a message without Content-Length")
        data = self.proc.stdout.read(length)
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    def _read_loop(self) -> None:
        while True:
            try:
                message = self._read_message()
            except (ValueError, OSError):
                message = None
            if message is None:
                with self._lock:
                    for queue in self._responses.values():
                        queue.put({"__gone__": True})
                return
            if "method" in message and "id" in message:
                self.server_requests.append(message)
                self._answer(message)
            elif "method" in message:
                self.notifications.append(message)
            else:
                request_id = message.get("id")
                with self._lock:
                    hashable = isinstance(request_id, int | str)
                    queue = self._responses.get(request_id) if hashable else None  # type: ignore[arg-type]
                if queue is not None:
                    queue.put(message)
                else:
                    self.orphans.append(message)

    def _answer(self, request: dict[str, Any]) -> None:
        method = request["method"]
        result: Any
        if method == "workspace/configuration":
            items = request.get("params", {}).get("items", [])
            result = [self.settings for _ in items]
        elif method == "retrace/permission/request":
            result = {"decision": "deny"}
        elif method == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "the fuzz client applies nothing"}
        elif method == "retrace/editor/save":
            result = {"saved": [], "failed": request.get("params", {}).get("uris", [])}
        elif method == "retrace/editor/restoreState":
            result = {"restored": False}
        else:
            result = None
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    # ------------------------------------------------------------------ requests
    def request(self, method: str, params: Any = None, *, timeout: float = 30.0, raw: bool = False) -> Any:
        """Send a request; returns the whole response message (``result`` or ``error``)."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            queue: Queue[dict[str, Any]] = Queue()
            self._responses[request_id] = queue
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None or raw:
            message["params"] = params
        self.send(message)
        try:
            response = queue.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no answer to {method} within {timeout}s") from None
        finally:
            with self._lock:
                self._responses.pop(request_id, None)
        if response.get("__gone__"):
            raise ServerGoneError(f"the server exited while {method} was pending")
        return response

    def request_raw_id(self, body: str, request_id: str, *, timeout: float = 10.0) -> dict[str, Any]:
        """Send a hand-written request whose ``id`` is ``request_id``; returns its answer."""
        queue: Queue[dict[str, Any]] = Queue()
        with self._lock:
            self._responses[request_id] = queue
        try:
            self.send_raw(body.encode("utf-8"))
            try:
                return queue.get(timeout=timeout)
            except Empty:
                raise TimeoutError(f"no answer to {body[:80]} within {timeout}s") from None
        finally:
            with self._lock:
                self._responses.pop(request_id, None)

    def request_many(self, calls: list[tuple[str, Any]], *, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Send every call at once (pipelined, like a busy editor), then collect the answers in
        order. ``params`` of ``...`` (Ellipsis) omits the member."""
        queues: list[tuple[str, int, Queue[dict[str, Any]]]] = []
        for method, params in calls:
            with self._lock:
                self._next_id += 1
                request_id = self._next_id
                queue: Queue[dict[str, Any]] = Queue()
                self._responses[request_id] = queue
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not ...:
                message["params"] = params
            self.send(message)
            queues.append((method, request_id, queue))
        answers = []
        deadline = time.monotonic() + timeout
        try:
            for method, _, queue in queues:
                try:
                    response = queue.get(timeout=max(0.1, deadline - time.monotonic()))
                except Empty:
                    raise TimeoutError(f"no answer to {method} within {timeout}s") from None
                if response.get("__gone__"):
                    raise ServerGoneError(f"the server exited while {method} was pending")
                answers.append(response)
        finally:
            with self._lock:
                for _, request_id, _ in queues:
                    self._responses.pop(request_id, None)
        return answers

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, *, apply_edit: bool = False) -> dict[str, Any]:
        capabilities: dict[str, Any] = {"workspace": {"configuration": True, "applyEdit": apply_edit}}
        response = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.workspace.as_uri(),
                "workspaceFolders": [{"uri": self.workspace.as_uri(), "name": self.workspace.name}],
                "capabilities": capabilities,
                "initializationOptions": {"storeDir": str(self.store), "settings": self.settings},
            },
        )
        self.notify("initialized", {})
        return response

    def wait_idle(self, limit_s: float = 60.0) -> None:
        """Until no session is running (polled through the protocol itself)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            sessions = self.request("retrace/session/list", {})["result"]["sessions"]
            if not any(s["running"] for s in sessions):
                return
            time.sleep(0.05)
        raise TimeoutError("sessions still running")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> int:
        try:
            if self.alive():
                self.request("shutdown", None, timeout=20)
                self.notify("exit")
        except (ServerGoneError, TimeoutError):
            pass
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        return code
