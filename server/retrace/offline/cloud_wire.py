"""Amazon Bedrock's and Google Vertex AI's wire forms of the fake Messages API.

The Anthropic SDK's own Bedrock and Vertex clients run against these routes for real:

* Bedrock: ``POST /model/{modelId}/invoke`` (one JSON message) and
  ``/model/{modelId}/invoke-with-response-stream`` (the AWS event stream: each Messages stream
  event is one binary frame — prelude with total and headers length and its CRC32, headers
  ``:event-type: chunk``, ``:content-type: application/json``, ``:message-type: event``, payload
  ``{"bytes": base64(<the event's JSON>)}``, the message CRC32 — as
  ``application/vnd.amazon.eventstream``). Authenticated by a SigV4 signature or a Bedrock API
  key (:func:`retrace.offline.cloud_auth.check_bedrock`); errors in Bedrock's shape
  (``{"message": ...}`` and ``x-amzn-ErrorType``).
* Vertex: ``POST /v1/projects/{p}/locations/{r}/publishers/anthropic/models/{model}:rawPredict``
  and ``:streamRawPredict`` (server-sent events as the Messages API), with an access token this
  fake issued at ``POST /token`` (the OAuth JWT-bearer grant google-auth makes for a service
  account whose ``token_uri`` points here: :class:`~retrace.offline.cloud_auth.GoogleTokens`).

The body is checked for the provider's fields — ``anthropic_version`` present, no ``model``
(the id is in the path), no ``stream`` on Bedrock (the path says it) — then, with the model from
the path, it is answered by the same :meth:`FakeModel.handle` as ``/v1/messages``: the same
Messages validation, the same scenario, recorded in :attr:`FakeModel.requests` (its Messages
form) with the wire in :attr:`FakeModel.wires`. A request refused before that (authentication,
provider fields) is recorded here instead (:attr:`CloudState.refused`).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import unquote
from weakref import WeakKeyDictionary

from retrace.offline.cloud_auth import GoogleTokens, check_bedrock
from retrace.offline.server import ROUTES, FakeModel, _Handler

TOKEN_PATH = "/token"
"""The fake Google OAuth token endpoint (a test service account's ``token_uri``)."""
BEDROCK_VERSIONS = ("bedrock-2023-05-31",)
VERTEX_VERSIONS = ("vertex-2023-10-16",)
_DATED_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
"""The Anthropic SDK may send its own dated API version in the body instead: accepted too."""
_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)$")
_VERTEX = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/models/"
    r"(?P<model>[^/:]+):(?P<op>rawPredict|streamRawPredict)$"
)
_BEDROCK_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}


@dataclass
class CloudState:
    """Per fake: the Google token endpoint and the requests refused before the Messages checks."""

    google: GoogleTokens = field(default_factory=GoogleTokens)
    refused: list[tuple[str, int, str]] = field(default_factory=list)
    """(wire, status, reason) of each request refused by authentication or the provider's fields."""
    paths: list[str] = field(default_factory=list)
    """The path of each request passed on to the Messages checks (the model id, a Vertex
    request's project and region are there), in order."""


_states: WeakKeyDictionary[FakeModel, CloudState] = WeakKeyDictionary()
_states_lock = threading.Lock()


def cloud_state(fake: FakeModel) -> CloudState:
    """The cloud routes' state for ``fake`` (made on first use)."""
    with _states_lock:
        state = _states.get(fake)
        if state is None:
            state = _states[fake] = CloudState()
        return state


def serve(fake: FakeModel, handler: _Handler, path: str) -> bool:
    """Answer ``POST path`` if it is a Bedrock, Vertex or token route (else ``False``)."""
    bedrock = _BEDROCK.match(path)
    vertex = _VERTEX.match(path)
    if bedrock is None and vertex is None and path != TOKEN_PATH:
        return False
    raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
    state = cloud_state(fake)
    if path == TOKEN_PATH:
        status, answer = state.google.grant(raw, fake.base_url + TOKEN_PATH)
        handler.send_json(status, answer)
    elif bedrock is not None:
        _serve_bedrock(fake, state, _Bedrock(handler), bedrock, raw)
    elif vertex is not None:
        _serve_vertex(fake, state, _Vertex(handler), vertex, raw)
    return True


def _provider_body(raw: bytes, versions: tuple[str, ...], *, allow_stream: bool) -> dict[str, Any] | str:
    """The body without the provider's fields, or why it is refused."""
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return "request body is not valid JSON"
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    version = body.pop("anthropic_version", None)
    if not isinstance(version, str) or not (version in versions or _DATED_VERSION.match(version)):
        return f"anthropic_version: expected {versions[0]!r}, got {version!r}"
    if "model" in body:
        return "extraneous key [model] is not permitted (the model id is in the path)"
    if "stream" in body and not allow_stream:
        return "extraneous key [stream] is not permitted"
    body.pop("anthropic_beta", None)
    return body


def _serve_bedrock(
    fake: FakeModel, state: CloudState, reply: _Bedrock, route: re.Match[str], raw: bytes
) -> None:
    handler = reply.handler
    headers = {k.lower(): v for k, v in handler.headers.items()}
    url = f"http://{headers.get('host', '')}{handler.path}"
    problem = check_bedrock("POST", url, headers, raw)
    body = _provider_body(raw, BEDROCK_VERSIONS, allow_stream=False) if problem is None else problem
    if isinstance(body, str):
        status = 403 if problem is not None else 400
        state.refused.append(("bedrock", status, body))
        reply.send_error_json(status, body)
        return
    state.paths.append(handler.path)
    body["model"] = unquote(route["model"])
    if route["op"] == "invoke-with-response-stream":
        body["stream"] = True
    fake.handle(cast(Any, reply), json.dumps(body).encode())


def _serve_vertex(
    fake: FakeModel, state: CloudState, reply: _Vertex, route: re.Match[str], raw: bytes
) -> None:
    problem = state.google.check_bearer(reply.handler.headers.get("authorization", ""))
    body = _provider_body(raw, VERTEX_VERSIONS, allow_stream=True) if problem is None else problem
    if isinstance(body, str):
        status = 401 if problem is not None else 400
        state.refused.append(("vertex", status, body))
        reply.google_error(status, body)
        return
    state.paths.append(reply.handler.path)
    body["model"] = unquote(route["model"])
    body["stream"] = route["op"] == "streamRawPredict"
    fake.handle(cast(Any, reply), json.dumps(body).encode())


class _Reply:
    """What :meth:`FakeModel.handle` answers through, in a cloud wire's form (the Anthropic
    form, as :class:`_Handler` writes it, unless a subclass changes it)."""

    wire = "anthropic"

    def __init__(self, handler: _Handler) -> None:
        self.handler = handler
        self.headers = handler.headers

    def send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.handler.send_json(status, body, headers)

    def send_error_json(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        self.handler.send_error_json(status, message, headers)

    def start_stream(self) -> None:
        self.handler.start_stream()

    def write_chunk(self, data: bytes) -> None:
        self.handler.write_chunk(data)

    def end_stream(self) -> None:
        self.handler.end_stream()

    def abort_stream(self) -> None:
        self.handler.abort_stream()


class _Vertex(_Reply):
    """Vertex streams server-sent events and passes the model's errors through; its own
    (authentication, quota) are Google's shape."""

    wire = "vertex"

    def send_error_json(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        if status in (401, 403, 429):
            self.google_error(status, message or "Quota exceeded", headers)
        else:
            self.handler.send_error_json(status, message, headers)

    def google_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = _GOOGLE_STATUS.get(status, "INTERNAL")
        error = {"code": status, "message": message, "status": kind}
        self.handler.send_json(status, {"error": error}, headers)


class _Bedrock(_Reply):
    """Bedrock frames each stream event in the AWS event stream and has its own error shape."""

    wire = "bedrock"

    def send_error_json(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        fallback = "ServiceUnavailableException" if status >= 500 else "ValidationException"
        kind = _BEDROCK_ERRORS.get(status, fallback)
        extra = {"x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
        self.handler.send_json(status, {"message": message or kind}, {**extra, **(headers or {})})

    def start_stream(self) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("content-type", "application/vnd.amazon.eventstream")
        h.send_header("transfer-encoding", "chunked")
        h.send_header("x-amzn-requestid", "fake-request")
        h.send_header("connection", "close")
        h.end_headers()
        h.close_connection = True

    def write_chunk(self, data: bytes) -> None:
        """One server-sent event (``event: ...\\ndata: ...``) in, one event-stream frame out."""
        lines = data.decode("utf-8").splitlines()
        payload = next((line.removeprefix("data: ") for line in lines if line.startswith("data: ")), "")
        chunk = {"bytes": base64.b64encode(payload.encode("utf-8")).decode("ascii")}
        headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
        self.handler.write_chunk(event_frame(headers, json.dumps(chunk).encode()))


def event_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, CRC32 of those eight
    bytes), string-valued headers (type 7), the payload and the CRC32 of all that precedes it."""
    encoded = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + len(value.encode()).to_bytes(2, "big") + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(encoded).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + encoded + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


ROUTES.append(serve)
