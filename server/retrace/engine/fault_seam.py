"""One shape for the engine's fault-injection seams (capture's file reads, the restore's disk
transaction): a single optional hook that tests install for the duration of a block and that
production code fires at fixed points. Production never installs one; firing is a single
``None`` check. Each room owns its own seam (its own steps), built from this class."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Hook = Callable[[str, str], None]
"""``hook(step, path)``: which step is about to run, on which path (each seam documents its own)."""


class FaultSeam:
    """A hook point: :meth:`fire` at each step, :meth:`injected` in tests (not thread-safe to
    install; it may fire from any thread)."""

    __slots__ = ("_hook",)

    def __init__(self) -> None:
        self._hook: Hook | None = None

    def fire(self, step: str, path: str) -> None:
        if self._hook is not None:
            self._hook(step, path)

    @contextmanager
    def injected(self, hook: Hook) -> Iterator[None]:
        """Install ``hook`` for the duration of the block (tests only)."""
        previous, self._hook = self._hook, hook
        try:
            yield
        finally:
            self._hook = previous
