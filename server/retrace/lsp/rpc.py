"""The thin layer between pygls and Retrace's handlers: raw dict → pydantic → handler → plain JSON.

For every method in :data:`retrace.protocol.methods.METHODS` that the client sends, one pygls
feature is registered. Its raw params stay a plain ``dict`` (pygls would otherwise turn them into
namedtuples, renaming keys such as ``from`` — see :func:`converter_factory`), are
validated with the method's params model, handed to the handler, and the handler's pydantic
result is dumped to camelCase JSON (pygls never sees a pydantic model, which it cannot serialise).

Errors become JSON-RPC errors with one clear line and the server stays up:
validation → ``InvalidParams`` (-32602) naming the field; :class:`RetraceError` →
:data:`RETRACE_ERROR_CODE` with ``data.code`` = the error's code; the server not being ready →
``ServerNotInitialized`` (-32002); anything else → ``InternalError`` (-32603), logged with its
traceback. Unknown methods are answered ``MethodNotFound`` by pygls itself.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any

from cattrs import Converter
from lsprotocol import converters
from pydantic import BaseModel, ValidationError
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from retrace.camel import dump, validation_message
from retrace.engine.errors import RetraceError
from retrace.protocol.methods import METHODS, MethodSpec

log = logging.getLogger(__name__)

RETRACE_ERROR_CODE = -32000
"""JSON-RPC error code of every deliberate Retrace error; ``data.code`` says which one."""

Handler = Callable[[Any, Any], Awaitable[BaseModel | None]]
"""``handler(server, params)``. The server is typed by each handler (``RetraceServer``); this layer
sits below the server class and only passes it through."""


FOLDER: ContextVar[str | None] = ContextVar("retrace_folder", default=None)
"""The root of the workspace folder the running request (or notification being sent) is for;
``None``: the first folder, as in a single-folder workspace (:mod:`retrace.lsp.folders`)."""

FolderScope = Callable[[str, str], "str | None"]
"""``scope(method, folder)``: the root a request naming ``folder`` runs in (``None``: the first
folder), or a :class:`RetraceError` when that folder does not serve that method."""


class NotReadyError(Exception):
    """The server cannot serve this method yet (not initialized, or the store failed to open)."""


@functools.cache
def converter_factory() -> Converter:
    """lsprotocol's converter, but params/results of methods it does not know stay plain JSON.
    One per process: building one registers hooks for lsprotocol's ~1,000 types, and each type's
    (un)structure function is generated on first use; a converter holds no state of its own
    beyond those, so every server and client of a process can share it."""
    converter = converters.get_converter()

    def keep_plain(obj: dict[str, Any], cls: type[Any]) -> Any:
        fields = {"params": None} if cls is not JsonRPCResponseMessage else {"result": None}
        return cls(**{**fields, **obj})

    for message_cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(message_cls, keep_plain)
    return converter


def parse_params(spec: MethodSpec, raw: Any) -> BaseModel:
    """Validate raw JSON params with the method's model (``InvalidParams`` on failure)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise JsonRpcInvalidParams(f"invalid params for {spec.name}: params must be a JSON object")
    try:
        return spec.params.model_validate(dict(raw))
    except ValidationError as exc:
        raise JsonRpcInvalidParams(validation_message(spec.name, exc)) from None


def to_rpc_error(method: str, exc: BaseException) -> JsonRpcException:
    """The JSON-RPC error a handler exception is answered with."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, ValidationError):
        # A model built inside a service failed: the input was acceptable, so it is our bug.
        return JsonRpcInternalError(f"internal error in {method}: {validation_message(method, exc)}")
    if isinstance(exc, RetraceError):
        return JsonRpcException(message=str(exc), code=RETRACE_ERROR_CODE, data={"code": exc.code})
    if isinstance(exc, NotReadyError):
        return JsonRpcServerNotInitialized(f"{method}: {exc}")
    first_line = (str(exc).splitlines() or [""])[0]
    return JsonRpcInternalError(f"internal error in {method}: {type(exc).__name__}: {first_line}")


def take_folder(spec: MethodSpec, raw: Any) -> tuple[Any, str | None]:
    """The raw params without ``folder`` (a request's routing key, not a field of any params
    model) and that key; ``InvalidParams`` when it is not a non-empty string."""
    if not isinstance(raw, Mapping) or "folder" not in raw or "folder" in spec.params.model_fields:
        return raw, None
    rest = {k: v for k, v in raw.items() if k != "folder"}
    folder = raw["folder"]
    if not isinstance(folder, str) or not folder:
        raise JsonRpcInvalidParams(f"invalid params for {spec.name}: folder: must be a folder's root or name")
    return rest, folder


def _enter_folder(
    spec: MethodSpec, raw: Any, scope: FolderScope | None
) -> tuple[Any, Token[str | None] | None]:
    raw, folder = take_folder(spec, raw)
    if folder is None:
        return raw, None
    if scope is None:
        raise JsonRpcInvalidParams(f"invalid params for {spec.name}: folder: this server has one folder")
    return raw, FOLDER.set(scope(spec.name, folder))


def _wrap(
    server: LanguageServer, spec: MethodSpec, handler: Handler, scope: FolderScope | None = None
) -> Callable[[Any], Awaitable[Any]]:
    async def request(raw: Any) -> Any:
        token: Token[str | None] | None = None
        try:
            raw, token = _enter_folder(spec, raw, scope)
            params = parse_params(spec, raw)
            result = await handler(server, params)
            if spec.result is None:
                return None
            if result is None:
                raise TypeError(f"handler for {spec.name} returned nothing")
            return dump(result)
        except JsonRpcException:
            raise
        except Exception as exc:
            error = to_rpc_error(spec.name, exc)
            if isinstance(error, JsonRpcInternalError):
                log.exception("%s failed", spec.name)
            else:
                log.info("%s: %s", spec.name, error.message)
            raise error from exc
        finally:
            if token is not None:
                FOLDER.reset(token)

    async def notification(raw: Any) -> None:
        try:
            params = parse_params(spec, raw)
            await handler(server, params)
        except JsonRpcException as exc:
            log.warning("ignored %s notification: %s", spec.name, exc.message)
        except Exception:
            log.exception("%s notification handler failed", spec.name)

    return notification if spec.direction == "clientNotification" else request


def register(
    server: LanguageServer, handlers: Mapping[str, Handler], scope: FolderScope | None = None
) -> None:
    """Register a handler for every client → server method; refuses gaps and strays. ``scope``
    routes a request naming a ``folder`` (:data:`FOLDER`); without it such a request is refused."""
    client_methods = {s.name: s for s in METHODS if s.direction in ("clientRequest", "clientNotification")}
    missing = sorted(set(client_methods) - set(handlers))
    stray = sorted(set(handlers) - set(client_methods))
    if missing or stray:
        raise RuntimeError(f"handler table mismatch: missing {missing}, not client methods {stray}")
    for name, spec in client_methods.items():
        server.feature(name)(_wrap(server, spec, handlers[name], scope))
