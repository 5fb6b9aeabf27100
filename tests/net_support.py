"""Network helpers shared by tests that start a local server (the fake S3, MCP over HTTP, the
metrics endpoint)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
