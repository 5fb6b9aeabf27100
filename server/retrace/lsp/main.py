"""Build the JSON-RPC server with every handler and serve it over stdio.

``python -m retrace`` and ``retrace serve`` (what the VS Code extension starts) run :func:`main`.
"""

from __future__ import annotations

import logging

from retrace import credentials
from retrace.lsp.folders import Folders
from retrace.lsp.handlers import CLIENT_METHOD_HANDLERS, register_lifecycle
from retrace.lsp.log import setup_logging
from retrace.lsp.rpc import register
from retrace.lsp.server import VERSION, RetraceServer
from retrace.lsp.startup import shutdown
from retrace.lsp.transport import serve_stdio

log = logging.getLogger(__name__)


def create_server() -> RetraceServer:
    server = RetraceServer()
    folders = Folders()
    register(server, CLIENT_METHOD_HANDLERS, folders.scope)
    register_lifecycle(server, folders)
    return server


def main(argv: list[str] | None = None) -> int:
    """Serve over stdio until the client exits."""
    del argv
    # Before anything else runs: the model key leaves every environment a tool could read.
    credentials.secure_process_start()
    server = create_server()
    setup_logging(server)
    log.info("retrace server %s starting (stdio)", VERSION)
    try:
        serve_stdio(server)
    finally:
        shutdown(server)
    return 0
