"""Restores in flight: what holds the automatic cleanup off.

An editor restore is several steps with the engine's gate free between them (the safety
checkpoint, ``workspace/applyEdit`` and the save answered by the editor, the verification, the
``restore`` checkpoint); so is a hunk restore. A collection between two steps could drop the
checkpoints the restore is working with. Each restore entry point holds :func:`holding` for its
whole run; :func:`in_flight` is what ``auto_gc.busy`` asks (per server's services object)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from weakref import WeakKeyDictionary

_COUNTS: WeakKeyDictionary[object, int] = WeakKeyDictionary()
"""Restores in flight per services object (weak: nothing of a closed folder is kept)."""


@contextmanager
def holding(services: object) -> Iterator[None]:
    """A restore of ``services``' store is in flight for the ``with`` block (nests, exceptions
    included)."""
    _COUNTS[services] = _COUNTS.get(services, 0) + 1
    try:
        yield
    finally:
        left = _COUNTS[services] - 1
        if left:
            _COUNTS[services] = left
        else:
            del _COUNTS[services]


def in_flight(services: object) -> bool:
    return _COUNTS.get(services, 0) > 0
