"""Trash directories of finished restores, removed by one background thread: a committed
restore hands its trash over and returns at once (removing a large tree is slow); the process
waits for the remover at exit, and :func:`drain_trash` waits for it on demand (close, tests)."""

from __future__ import annotations

import atexit
import queue
import shutil
import threading
from pathlib import Path

_TRASH: queue.Queue[Path] = queue.Queue()
_TRASH_WORKER: list[threading.Thread] = []
_TRASH_LOCK = threading.Lock()


def _remove_trash_forever() -> None:
    while True:
        path = _TRASH.get()
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            _TRASH.task_done()


def discard_later(path: Path) -> None:
    """Hand a trash directory to the one background remover (started on first use)."""
    with _TRASH_LOCK:
        if not _TRASH_WORKER:
            worker = threading.Thread(target=_remove_trash_forever, name="rt-trash", daemon=True)
            worker.start()
            _TRASH_WORKER.append(worker)
            atexit.register(drain_trash)
    _TRASH.put(path)


def drain_trash() -> None:
    """Wait until every trash directory handed to the background remover is gone."""
    if _TRASH_WORKER:
        _TRASH.join()
