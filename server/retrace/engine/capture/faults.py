"""Fault seam of capture's file reads: tests install a hook that runs at fixed points of every
read of a workspace file (a writer rewriting it in place mid-read, the path turning into a FIFO
just before it is opened). Production never installs one; the call is a single ``None`` check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Hook = Callable[[str, str], None]
"""``hook(step, path)``: ``step`` is ``"open"`` (about to open the file) or ``"read"`` (opened and
identified, about to read it); ``path`` is what is opened (absolute, or a name relative to a
directory fd for very long paths)."""

_hook: Hook | None = None


def fire(step: str, path: str) -> None:
    if _hook is not None:
        _hook(step, path)


@contextmanager
def injected(hook: Hook) -> Iterator[None]:
    """Install ``hook`` for the duration of the block (not thread-safe: tests only)."""
    global _hook
    previous, _hook = _hook, hook
    try:
        yield
    finally:
        _hook = previous
