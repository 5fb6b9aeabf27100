"""The stdio transport: pygls' message loop over a reader that bounds what one message may cost.

A client (or anything that can write to the server's stdin) chooses each message's size, and
pygls would buffer a body of any ``Content-Length`` whole and then parse it (about 8× its size in
memory). :class:`CappedReader` checks the length before reading the body: a body over
:data:`MAX_MESSAGE_BYTES` is skipped in bounded chunks, never buffered, and replaced by a small
stand-in message (:data:`TOO_LARGE`) that :class:`~retrace.lsp.server.RetraceProtocol` answers
with a clear Invalid Request error when the request's id could be read from the body's first
bytes (a notification, or an id past them, is logged). Header lines are read up to
:data:`MAX_HEADER_LINE` bytes. The server stays up and answers the next message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import Awaitable
from threading import Event
from typing import TYPE_CHECKING, Any

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 32 << 20
"""One JSON-RPC message's body. The largest the extension sends is a prompt with its editor
context (capped far below this) or settings; 4× the default file-size cap leaves room."""
MAX_HEADER_LINE = 8 << 10
ID_WINDOW = 64 << 10
"""How much of an oversized body is read to find its request id (clients put it first)."""
SKIP_CHUNK = 256 << 10
TOO_LARGE = "$/retrace/messageTooLarge"

_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")')


def _string_end(data: bytes, start: int) -> int:
    """Index just after the JSON string starting at ``start`` (a quote); -1 when cut off."""
    i = start + 1
    while i < len(data):
        c = data[i]
        if c == 0x5C:  # backslash: skip the escaped character
            i += 2
            continue
        if c == 0x22:
            return i + 1
        i += 1
    return -1


def top_level_id(head: bytes) -> int | str | None:
    """The ``id`` member of the JSON object ``head`` begins (only at the top level, never one
    inside ``params``), when it is within ``head``; else ``None``."""
    depth = 0
    i = 0
    while i < len(head):
        c = head[i]
        if c == 0x22:
            end = _string_end(head, i)
            if end < 0:
                return None
            if depth == 1 and head[i:end] == b'"id"' and (m := _ID_VALUE.match(head, end)):
                value = json.loads(m.group(1))
                return value if isinstance(value, int | str) else None
            i = end
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        i += 1
    return None


def stand_in(ident: int | str | None, size: int) -> bytes:
    """The small message handed to pygls in place of a skipped body of ``size`` bytes."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": TOO_LARGE, "params": {"bytes": size}}
    if ident is not None:
        msg["id"] = ident
    return json.dumps(msg).encode()


def too_large_message(size: int) -> str:
    return (
        f"a message of {size} bytes is over the {MAX_MESSAGE_BYTES} bytes one JSON-RPC message may "
        "hold: not read"
    )


class CappedReader(StdinAsyncReader):
    def readline(self) -> Awaitable[bytes]:
        loop: asyncio.AbstractEventLoop = self.loop
        return loop.run_in_executor(self.executor, self.stdin.readline, MAX_HEADER_LINE)

    def readexactly(self, n: int) -> Awaitable[bytes]:
        loop: asyncio.AbstractEventLoop = self.loop
        if n <= MAX_MESSAGE_BYTES:
            return loop.run_in_executor(self.executor, self.stdin.read, n)
        return loop.run_in_executor(self.executor, self._skip, n)

    def _skip(self, n: int) -> bytes:
        head = self.stdin.read(ID_WINDOW)
        left = n - len(head)
        scratch = memoryview(bytearray(SKIP_CHUNK))  # one buffer, reused: nothing piles up
        while left > 0:
            got = self.stdin.readinto(scratch[: min(left, SKIP_CHUNK)])  # type: ignore[attr-defined]
            if not got:
                return b""  # the client went away mid-message: the loop ends as on EOF
            left -= got
        log.warning("skipped a JSON-RPC message of %d bytes (limit %d)", n, MAX_MESSAGE_BYTES)
        return stand_in(top_level_id(head), n)


def serve_stdio(server: JsonRPCServer) -> None:
    """``server.start_io()`` (pygls' asynchronous stdio loop) with :class:`CappedReader`."""
    server._stop_event = stop = Event()  # pygls' own stop flag (its shutdown sets it)
    reader = CappedReader(sys.stdin.buffer, server.thread_pool)
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(
            run_async(
                stop_event=stop,
                reader=reader,
                protocol=server.protocol,
                logger=logging.getLogger("pygls.server"),  # as pygls does: lsp/log.py filters it
                error_handler=server.report_server_error,
            )
        )
    except BrokenPipeError:
        log.error("connection to the client is lost: shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
