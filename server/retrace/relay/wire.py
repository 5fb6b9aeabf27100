"""The relay's wire rules, shared by both ends (standard library only).

**Where.** One socket per store, ``<relay dir>/<first 32 hex of sha256(real store path)>.sock``.
The relay dir is ``$RETRACE_RELAY_DIR`` when set, else ``/tmp/retrace-<uid>``: a fixed rule
both ends compute alike whatever their environment (``XDG_RUNTIME_DIR`` is missing in some of
the places hooks run), and short whatever the store's path: about 60 bytes, within the
``sun_path`` limit (108 bytes on Linux, 104 on macOS).

**Who.** The relay dir must be a real directory (no symlink) owned by this user with no access
for group or others (0700), the socket 0600. Both ends check the other's user id on the
connection (``SO_PEERCRED``; ``LOCAL_PEERCRED`` on macOS): the server refuses a peer of another
uid, the client a server of another uid. A directory someone else made (``/tmp`` is shared)
disables the relay; it never weakens it.

**What.** One request per connection: one JSON object on one line (ASCII, ``\\n``), at most
:data:`MAX_MESSAGE_BYTES`; one JSON object answered on one line: ``{"ok": true, "result": {...}}``
or ``{"ok": false, "code": "...", "error": "one line"}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import struct
import sys
from pathlib import Path
from typing import Any

MAX_MESSAGE_BYTES = 32 << 20
"""One request or answer (the cap of the stdio transport, ``lsp/transport.py``)."""
SUN_PATH_MAX = 104
"""The smaller ``sun_path`` of the POSIX systems Retrace runs on (macOS; Linux allows 108)."""
PROTOCOL = 1
"""Sent in every request; a server refuses a version it does not speak."""
RELAY_DIR_ENV = "RETRACE_RELAY_DIR"

# Error codes of a refusal (``code`` of an answer with ``ok: false``).
UNKNOWN_METHOD = "unknownMethod"
INVALID_REQUEST = "invalidRequest"
INVALID_PARAMS = "invalidParams"
TOO_LARGE = "tooLarge"
PEER_REFUSED = "peerRefused"
OTHER_STORE = "otherStore"
"""The server holds another store (the rule's hash collided, or the store was replaced)."""
GONE = "gone"
"""The process is letting go of the store (a headless holder closing): open it yourself."""
NOT_HOLDER = "notHolder"
"""``release`` asked of the editor's server, which keeps the store."""
FAILED = "failed"
"""The method ran and failed (the engine's one-line message)."""
INTERNAL = "internal"


class RelayUnavailableError(Exception):
    """No usable relay here (platform without Unix sockets, unsafe directory, path too long)."""


def relay_dir() -> Path:
    override = os.environ.get(RELAY_DIR_ENV)
    if override:
        return Path(override)
    return Path("/tmp") / f"retrace-{os.geteuid()}"  # checked 0700 and ours before use


def socket_path(store_dir: str | os.PathLike[str]) -> Path:
    """The socket of the server holding ``store_dir`` (any alias of it: the real path is hashed)."""
    if not hasattr(socket, "AF_UNIX") or sys.platform == "win32":
        raise RelayUnavailableError("this platform has no Unix domain sockets")
    try:
        real = os.path.realpath(os.fspath(store_dir))
        encoded = os.fsencode(real)
    except (UnicodeEncodeError, ValueError) as exc:  # a name no file on this system can have
        raise RelayUnavailableError(f"the store path cannot be named on this system: {exc}") from None
    name = hashlib.sha256(encoded).hexdigest()[:32] + ".sock"
    path = relay_dir() / name
    if len(os.fsencode(str(path))) >= SUN_PATH_MAX:
        raise RelayUnavailableError(f"the relay socket path is too long ({len(str(path))} bytes): {path}")
    return path


def check_private_dir(path: Path) -> None:
    """:class:`RelayUnavailableError` unless ``path`` is a real directory of ours with mode 0700."""
    try:
        st = os.lstat(path)
    except OSError as exc:  # missing, or out of reach (another user's parent directory)
        raise RelayUnavailableError(f"no usable relay directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RelayUnavailableError(f"the relay directory {path} is not a directory (a link?)")
    if st.st_uid != os.geteuid():
        raise RelayUnavailableError(f"the relay directory {path} belongs to uid {st.st_uid}, not to us")
    if st.st_mode & 0o077:
        raise RelayUnavailableError(
            f"the relay directory {path} is open to others (mode {st.st_mode & 0o777:o})"
        )


def peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (``None`` where the platform cannot tell:
    then the 0700 directory is the only guard)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", raw)[1])
    if sys.platform == "darwin":  # LOCAL_PEERCRED (1) at SOL_LOCAL (0): struct xucred {version, uid, ...}
        raw = conn.getsockopt(0, 1, 76)
        return int(struct.unpack_from("=II", raw)[1])
    return None


def encode(message: dict[str, Any]) -> bytes:
    """One line of ASCII JSON: a name whose bytes are no UTF-8 (held as surrogates, as Python
    decodes file names) is escaped as ``\\udcXX`` and decoded back to the same string."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


class TooLargeError(Exception):
    """A message over :data:`MAX_MESSAGE_BYTES` (its end was never read)."""


def read_line(conn: socket.socket, limit: int | None = None) -> bytes:
    """One ``\\n``-terminated message without its newline; :class:`TooLargeError` past ``limit``
    bytes (nothing more is buffered), :class:`ConnectionError` when the peer closes first."""
    limit = MAX_MESSAGE_BYTES if limit is None else limit
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(min(1 << 20, limit + 1 - size))
        if not chunk:
            raise ConnectionError("the peer closed the connection before the end of its message")
        end = chunk.find(b"\n")
        if end >= 0:
            chunks.append(chunk[:end])
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise TooLargeError(
                f"message over {limit >> 20} MiB" if limit >= 1 << 20 else f"message over {limit} bytes"
            )


def refusal(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "error": message}
