"""``retrace mcp``: the checkpoints offered over MCP on stdio (:mod:`retrace.mcp_server`).

Runs until the client closes stdin. Only the protocol goes to stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging

import anyio

from retrace.cli.errors import CliError
from retrace.mcp_server.access import McpToolError, StoreAccess
from retrace.mcp_server.server import serve


def cmd_mcp(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING)  # stderr: stdout is the protocol
    try:
        access = StoreAccess.of(args.workspace, args.store)
    except McpToolError as exc:
        raise CliError(str(exc)) from None
    anyio.run(serve, access)
    return 0
