"""The command line's side of the relay (standard library only: the CLI's fast path).

:func:`forward` hands one call to the server holding a store: ``None`` when no live server does
(no socket, a stale socket of a killed server, a relay directory that is not safely ours, a
server of another store, a headless holder letting go of it), the result when the server ran
it, :class:`RelayRefusedError` with the server's own message when the server refused or the call
failed there.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path
from typing import Any

from retrace.relay import wire


class RelayRefusedError(Exception):
    """The server holding the store refused the call or the call failed there (``code``: one of
    :mod:`retrace.relay.wire`'s codes; the message is the server's)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RelayTimeoutError(RelayRefusedError):
    """The server took the call but did not answer in time (it may still complete it)."""


def forward(
    store_dir: str | os.PathLike[str],
    method: str,
    params: dict[str, Any],
    timeout: float = 60.0,
    *,
    workspace: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
    """Run ``method(params)`` on the live server holding ``store_dir``; ``None`` when there is
    none. ``workspace``: the caller's workspace, which the server checks is the one its store
    records (as opening the store would)."""
    conn = _connect(store_dir, timeout)
    if conn is None:
        return None
    with conn:
        request = {
            "v": wire.PROTOCOL,
            "method": method,
            "store": str(Path(store_dir).absolute()),
            "workspace": None if workspace is None else str(Path(workspace).absolute()),
            "params": params,
        }
        try:
            conn.sendall(wire.encode(request))
            answer = json.loads(wire.read_line(conn))
        except TimeoutError:
            raise RelayTimeoutError(
                "timeout", f"the Retrace server holding the store did not answer within {timeout:g} s"
            ) from None
        except (OSError, ValueError, wire.TooLargeError) as exc:
            raise RelayRefusedError(
                wire.INTERNAL, f"the Retrace server holding the store failed to answer: {exc}"
            ) from None
    if not isinstance(answer, dict):
        raise RelayRefusedError(wire.INTERNAL, "the Retrace server's answer is not a JSON object")
    result = answer.get("result")
    if answer.get("ok") is True and isinstance(result, dict):
        return result
    code = str(answer.get("code") or wire.INTERNAL)
    if code in (wire.OTHER_STORE, wire.GONE):
        return None
    raise RelayRefusedError(code, str(answer.get("error") or "the Retrace server refused the call"))


def answering(store_dir: str | os.PathLike[str]) -> bool:
    """Whether a live process of ours listens for ``store_dir`` (a connect, no request)."""
    conn = _connect(store_dir, 1.0)
    if conn is None:
        return False
    conn.close()
    return True


def _connect(store_dir: str | os.PathLike[str], timeout: float) -> socket.socket | None:
    """A connection to the store's live server, checked to run as us; ``None`` when none."""
    try:
        path = wire.socket_path(store_dir)
        wire.check_private_dir(Path(path).parent)
    except wire.RelayUnavailableError:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(os.fspath(path))
        uid = wire.peer_uid(conn)
    except OSError:  # no socket, or a stale one (refused), or not a socket at all
        conn.close()
        return None
    if uid is not None and uid != os.geteuid():
        with contextlib.suppress(OSError):
            conn.close()
        return None
    return conn
