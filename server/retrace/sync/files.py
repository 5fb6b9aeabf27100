"""The one way sync writes its local files (remote.json, push state, outbox, index and
reference caches): whole and atomic — a temporary file beside the target, fsynced, then renamed —
so a reader or a crash sees the old file or the new one, never a torn one.

The temporary name is unique per call (process, thread and a random token): the server's sync
thread, its request handlers and a CLI in another process may write the same file at once, and
each must rename its own temporary file.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(path: Path, data: object, *, compact: bool = False) -> None:
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=1) + "\n"
    write_atomic(path, text.encode("utf-8"))
