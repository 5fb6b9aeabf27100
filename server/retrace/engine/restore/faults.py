"""Fault seam of the disk applier: tests install a hook that runs just before each rename or
unlink the applier performs (a concurrent writer, a parent swapped for a symlink, a crash).
Production never installs one; the call is a single ``None`` check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Hook = Callable[[str, str], None]
"""``hook(step, path)``: ``step`` is ``"replace"``, ``"create"``, ``"delete"``, ``"chmod"``,
``"rollback"``, ``"prune"`` or ``"write"`` (a temporary file about to be written, possibly on a
writer thread); ``path`` is workspace-relative."""

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
