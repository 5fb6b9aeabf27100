"""The hook command's log: ``<store>/logs/hooks.log`` (standard library only: the fast path).

One hook call collects its lines and writes them once at the end with one append; past
:data:`LOG_MAX_BYTES` the file is renamed ``hooks.log.1`` (the one older file kept) first. When no
store exists (yet) the lines go to the user's state folder (``$XDG_STATE_HOME/retrace``, else
``~/.local/state/retrace``): a log line never creates a store's folder. Writing never raises:
when even the log cannot be written (a full disk), one line goes to stderr, never to stdout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

LOG_MAX_BYTES = 1 << 20
LOG_NAME = "hooks.log"


class HookLog:
    """The lines one hook call has to say, written once at the end (``<store>/logs/hooks.log``,
    or the user's log folder when there is no store). Writing it never raises."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.hook = "?"
        self.store: Path | None = None
        self.lines: list[str] = []

    def say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        flat = " ".join(message.split())[:2000]
        self.lines.append(f"{stamp} pid={os.getpid()} {self.agent} {self.hook}: {flat}\n")

    def flush(self) -> None:
        if not self.lines:
            return
        path = log_path(self.store)
        text = "".join(self.lines).encode("utf-8", "backslashreplace")
        self.lines = []
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_size + len(text) > LOG_MAX_BYTES:
                    path.replace(path.with_name(LOG_NAME + ".1"))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, text)
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk, a read-only store: stderr is all that is left
            with contextlib.suppress(OSError, ValueError):
                sys.__stderr__.write(f"retrace hook: cannot write {path}: {exc}\n")  # type: ignore[union-attr]


def log_path(store: Path | None) -> Path:
    """Where a hook call's lines go: the store's log when the store exists, else the user's."""
    if store is not None and (store / "store.json").exists():
        return store / "logs" / LOG_NAME
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "retrace" / LOG_NAME
