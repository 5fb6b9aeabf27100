"""Python ``logging`` is the server's only logging API; records reach the client's log channel.

:class:`WindowLogMessageHandler` forwards records as ``window/logMessage`` (the extension shows
them in its "Retrace" log output channel), skipping pygls' own records, which would recurse
(sending a message logs). Everything also goes to stderr, which the client captures too.
``RETRACE_LOG_LEVEL`` (default ``INFO``) sets the level. A request answered with a deliberate
JSON-RPC error (invalid params, unknown checkpoint, ...) is the client's mistake, already logged
once at INFO by :mod:`retrace.lsp.rpc`: pygls' traceback for it is dropped (:class:`AnsweredErrors`)
so the log shows real failures, not a traceback per typo.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

_LEVELS = (
    (logging.ERROR, lsp.MessageType.Error),
    (logging.WARNING, lsp.MessageType.Warning),
    (logging.INFO, lsp.MessageType.Info),
)


class WindowLogMessageHandler(logging.Handler):
    """Forwards records once the client is ``initialized``; earlier ones are held (bounded) so the
    first message a client reads is the ``initialize`` response."""

    HELD_MAX = 200

    def __init__(self, server: LanguageServer) -> None:
        super().__init__()
        self.server = server
        self.held: list[logging.LogRecord] | None = []

    def client_ready(self) -> None:
        held, self.held = self.held or [], None
        for record in held:
            self.emit(record)

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("pygls") or self.server.protocol.writer is None:
            return
        if self.held is not None:
            if len(self.held) < self.HELD_MAX:
                self.held.append(record)
            return
        kind = next((kind for level, kind in _LEVELS if record.levelno >= level), lsp.MessageType.Log)
        try:
            self.server.window_log_message(lsp.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:  # logging must never take the server down
            self.handleError(record)


class AnsweredErrors(logging.Filter):
    """Drops pygls' ``Exception occurred`` records for errors that were answered on purpose, and
    cuts a client's unparsable frame (not JSON) to one line instead of a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, json.JSONDecodeError):
            record.msg = f"{record.getMessage()}: a frame that is not JSON ({error})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            return True
        return not (isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError))


def client_ready() -> None:
    """The client sent ``initialized``: start forwarding log records (held ones first)."""
    for handler in logging.getLogger("retrace").handlers:
        if isinstance(handler, WindowLogMessageHandler):
            handler.client_ready()


def setup_logging(server: LanguageServer) -> None:
    level = os.environ.get("RETRACE_LOG_LEVEL", "INFO").upper()
    root = logging.getLogger()
    root.setLevel(level)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    window = WindowLogMessageHandler(server)
    window.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    window.setLevel(logging.INFO)
    logging.getLogger("retrace").addHandler(window)
    # pygls logs every message it handles at INFO/DEBUG; keep stderr readable.
    logging.getLogger("pygls").setLevel(max(logging.WARNING, root.level))
    for name in ("pygls.protocol.json_rpc", "pygls.server", "pygls.io_"):
        logging.getLogger(name).addFilter(AnsweredErrors())
