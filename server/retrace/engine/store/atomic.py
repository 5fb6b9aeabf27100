"""THE durable whole-file replace of the store's small files: a temporary file beside the target
(unique per process and thread), written, fsynced, renamed over the target. A reader sees the old
file or the new one, never a torn one; a failure leaves the target as it was and no temporary
file behind. Used by the store's pointer (``home.py``) and by remote sync's local state.

The temporary name is unique per call (process, thread and a random token): the server's sync
thread, its request handlers and a CLI in another process may write the same file at once, and
each must rename its own temporary file.
"""

from __future__ import annotations

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
