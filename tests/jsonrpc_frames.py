"""JSON-RPC over a server process's stdin/stdout, framed as the Language Server Protocol frames
it (``Content-Length`` headers): for the tests that speak to a real ``retrace serve`` without a
client library."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    """Write one framed message to the process's stdin."""
    body = json.dumps(message).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def read(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The next framed message on the process's stdout (fails if the output ends first)."""
    assert proc.stdout is not None
    length = None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed its output"
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None
    result: dict[str, Any] = json.loads(proc.stdout.read(length))
    return result
