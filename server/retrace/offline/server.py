"""A local fake of the Anthropic Messages API: real HTTP, real server-sent events.

``POST /v1/messages`` is validated like the real API (:mod:`retrace.offline.validation`; an
invalid request gets a 400 in the real error shape) and answered from a :class:`Scenario`,
streaming (``"stream": true``: ``message_start``, ``ping``, ``content_block_*`` with
``text_delta`` / ``input_json_delta``, ``message_delta`` with ``stop_reason`` and ``usage``,
``message_stop``, chunked transfer encoding) or as one JSON message. Every request body is
recorded in :attr:`FakeModel.requests` for assertions, including the rejected ones, with its
arrival time (:attr:`FakeModel.times`) and the wire it came by (:attr:`FakeModel.wires`):
``POST /v1/chat/completions`` is OpenAI chat completions, answered from the same scenario
(:mod:`retrace.offline.openai_wire`).

Input tokens are accounted by the prompt cache (:mod:`retrace.offline.prompt_cache`): ``usage``
carries ``input_tokens``, ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` as the
API does, in the message and, streaming, in ``message_start`` and (cumulative) ``message_delta``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from retrace.offline.openai_validation import validate_chat
from retrace.offline.openai_wire import CHAT_PATH, CHAT_WIRE, answer_chat, chat_error_body, script_view
from retrace.offline.prompt_cache import CacheUsage, PromptCache
from retrace.offline.scenario import Scenario, ScriptedResponse
from retrace.offline.validation import InvalidRequestError, validate_request

FINISHED_TEXT = "(scenario finished)"
_ERRORS = {
    400: ("invalid_request_error", "invalid request"),
    404: ("not_found_error", "not found"),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


Route = Callable[["FakeModel", "_Handler", str], bool]
ROUTES: list[Route] = []
"""Other wire forms of the same API (:mod:`retrace.offline.cloud_wire` adds Bedrock's and
Vertex's on import): each answers a ``POST`` path it knows (``True``) or passes it on."""

_DELTA_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
"""The cumulative counts a ``message_delta`` carries."""


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content)


class _Script:
    """The scenario cursors (one per lane, see ``ScriptedResponse.lane``); shared by the server
    threads, so guarded by one lock."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.cursors: dict[str | None, int] = {}
        self.failures: dict[int, int] = {}  # response index -> HTTP errors already served
        self.lock = threading.Lock()

    def _lane(self, body: dict[str, Any]) -> str | None:
        messages = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
        first = _message_text(messages[0]) if messages else ""
        lanes = {r.lane for r in self.scenario.responses if r.lane is not None}
        return next((lane for lane in sorted(lanes, key=len, reverse=True) if lane in first), None)

    def next(self, body: dict[str, Any]) -> tuple[ScriptedResponse, int | None]:
        """The response for this request and, if it must fail with an HTTP status, that status."""
        with self.lock:
            lane = self._lane(body)
            responses = self.scenario.responses
            for index in range(self.cursors.get(lane, 0), len(responses)):
                response = responses[index]
                if response.lane != lane or not _matches(response, body):
                    continue
                if response.status is not None and self.failures.get(index, 0) < response.times:
                    self.failures[index] = self.failures.get(index, 0) + 1
                    self.cursors[lane] = index  # the retry must land on the same response
                    return response, response.status
                self.cursors[lane] = index + 1
                return response, None
            self.cursors[lane] = len(responses)
            return ScriptedResponse(text=FINISHED_TEXT), None


def _matches(response: ScriptedResponse, body: dict[str, Any]) -> bool:
    match = response.match
    if match is None:
        return True
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if match.last_user_text_contains is not None:
        texts = [_message_text(m) for m in messages if m.get("role") == "user" and _message_text(m)]
        if not texts or match.last_user_text_contains not in texts[-1]:
            return False
    last = messages[-1] if messages else {}
    last_content = last.get("content")
    results = [
        b
        for b in (last_content if isinstance(last_content, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    if match.last_tool_result_contains is not None and not any(
        match.last_tool_result_contains in _tool_result_text(b) for b in results
    ):
        return False
    if match.tool_result_is_error is not None:
        if not results:
            return False
        if any(bool(b.get("is_error")) for b in results) != match.tool_result_is_error:
            return False
    return True


class FakeModel:
    """A scripted Messages API on 127.0.0.1 (a free port unless ``port`` is given).

    ``with FakeModel(scenario) as fake: AsyncAnthropic(base_url=fake.base_url, api_key="x")``.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scenario = scenario
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order (also the ones answered with an error)."""
        self.times: list[float] = []
        """When each recorded request arrived (``clock()``, seconds)."""
        self.usages: list[dict[str, Any]] = []
        """The ``usage`` answered to each successful request, in order."""
        self.cache = PromptCache(clock)
        """The prompt cache this API accounts input tokens with."""
        self._clock = clock
        self.statuses: list[int] = []
        """The HTTP status answered to each recorded request."""
        self.wires: list[str] = []
        """The wire each recorded request came by: ``anthropic`` (the Messages API), ``chat``
        (chat completions), ``bedrock``, ``vertex``."""
        self.headers: list[dict[str, str]] = []
        """The HTTP headers of each recorded request (lower-case names), e.g. to check which API key
        the client sent."""
        self._script = _Script(scenario)
        self._host = host
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the fake model is not running; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        if self._httpd is None:
            self._httpd = ThreadingHTTPServer((self._host, self._port), _make_handler(self))
            self._httpd.daemon_threads = True
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},  # stop() waits for one poll
                name="retrace-fake-model",
                daemon=True,
            )
            self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeModel:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ serving
    def _record(
        self, body: dict[str, Any], status: int, headers: dict[str, str], at: float, wire: str = "anthropic"
    ) -> None:
        with self._script.lock:
            self.wires.append(wire)
            self.times.append(at)
            self.requests.append(body)
            self.statuses.append(status)
            self.headers.append(headers)

    def handle(self, handler: _Handler, raw: bytes) -> None:
        at = self._clock()
        headers = {name.lower(): value for name, value in handler.headers.items()}
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            handler.send_error_json(400, "request body is not valid JSON")
            return
        if not isinstance(body, dict):
            handler.send_error_json(400, "request body must be a JSON object")
            return
        chat = handler.wire == CHAT_WIRE
        try:
            if chat:
                validate_chat(body)
            else:
                validate_request(body)
        except InvalidRequestError as e:
            self._record(body, 400, headers, at, handler.wire)
            handler.send_error_json(400, str(e))
            return
        script_body = script_view(body) if chat else body
        response, status = self._script.next(script_body)
        if status is not None:
            self._record(body, status, headers, at, handler.wire)
            handler.send_error_json(status, response.error_message, _retry_headers(status, response))
            return
        self._record(body, 200, headers, at, handler.wire)
        cached = self.cache.account(script_body)
        message = _build_message(script_body, response, cached)
        with self._script.lock:
            self.usages.append(message["usage"])
        if chat:
            answer_chat(handler, body, message, response)
        elif body.get("stream"):
            _stream(handler, message, response)
        else:
            handler.send_json(200, message)


def _retry_headers(status: int, response: ScriptedResponse) -> dict[str, str]:
    headers: dict[str, str] = {}
    if response.retry_after is not None:
        headers["retry-after"] = response.retry_after
    if response.retry_after_ms is not None:
        headers["retry-after-ms"] = response.retry_after_ms
    if not headers and status in (429, 529):
        headers["retry-after-ms"] = "10"
    return headers


def _build_message(body: dict[str, Any], response: ScriptedResponse, cached: CacheUsage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if response.text:
        content.append({"type": "text", "text": response.text, "citations": None})
    for call in response.tool_calls:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": call.name,
                "input": call.input,
            }
        )
    if response.usage.input_tokens is not None:  # scripted: no cache accounting
        cached = CacheUsage(response.usage.input_tokens, 0, 0)
    output_tokens = response.usage.output_tokens
    if output_tokens is None:
        output_tokens = max(1, len(json.dumps(content)) // 4)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": response.effective_stop_reason(),
        "stop_sequence": None,
        "usage": cached.usage(output_tokens),
    }


def _stream(handler: _Handler, message: dict[str, Any], response: ScriptedResponse) -> None:
    handler.start_stream()
    delay = response.chunk_delay_ms / 1000.0

    def send(event: str, data: dict[str, Any] | str) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        handler.write_chunk(f"event: {event}\ndata: {payload}\n\n".encode())
        if delay:
            time.sleep(delay)

    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**usage, "output_tokens": 1}
    send("message_start", {"type": "message_start", "message": start})
    send("ping", {"type": "ping"})
    broken = response.truncate_stream or response.malformed_event
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            send(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for i, piece in enumerate(_chunks(block["text"], 12)):
                send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                if broken and i == 1:
                    break
        else:
            start_block = {**block, "input": {}}
            send(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start_block},
            )
            partial = json.dumps(block["input"])
            if response.invalid_tool_json and index == len(message["content"]) - len(response.tool_calls):
                partial = '{"path": "x", ]]'
            for piece in _chunks(partial, 15):
                send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        if broken:
            break
        send("content_block_stop", {"type": "content_block_stop", "index": index})
    if response.malformed_event:
        send("content_block_delta", "{this is not json")
    if broken:
        handler.abort_stream()
        return
    send(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {k: usage[k] for k in _DELTA_USAGE},
        },
    )
    send("message_stop", {"type": "message_stop"})
    handler.end_stream()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeModel
    wire = "anthropic"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        try:
            if any(route(self.fake, self, path) for route in ROUTES):
                return
            if path not in ("/v1/messages", CHAT_PATH):
                self.send_error_json(404, f"no route for POST {self.path}")
                return
            self.wire = CHAT_WIRE if path == CHAT_PATH else "anthropic"
            length = int(self.headers.get("content-length") or 0)
            self.fake.handle(self, self.rfile.read(length))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (a cancelled turn): nothing to do

    def do_GET(self) -> None:
        self.send_error_json(404, f"no route for GET {self.path}")

    def send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.send_header("connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def send_error_json(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        kind, default = _ERRORS.get(status, ("api_error", "error"))
        error = {"type": "error", "error": {"type": kind, "message": message or default}}
        if self.wire == CHAT_WIRE:
            error = chat_error_body(status, message or default)
        self.send_json(status, error, headers)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort_stream(self) -> None:
        """Drop the connection without the terminating chunk: a truncated body."""
        self.wfile.flush()
        self.close_connection = True


def _make_handler(fake: FakeModel) -> type[_Handler]:
    return type("FakeModelHandler", (_Handler,), {"fake": fake})
