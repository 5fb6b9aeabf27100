"""The deferred catch-up: an open that answers before it has looked for changes made while no
engine watched the workspace, and the rule that nothing which depends on them runs first.

``Engine.open(..., defer_catch_up=True)`` returns as soon as the journals are replayed and any
interrupted restore is rolled back; the catch-up walk (one stat walk of the workspace, which
also starts the watcher on every directory, and the ``external`` checkpoint of what it finds)
is left pending. Reading the timeline, a checkpoint's files or a diff between checkpoints does
not need it. Everything that captures, commits or compares the workspace with the head —
checkpoints, external and foreign records, restores (plan, apply, editor-applied commit and
verification, safety checkpoints), retention — runs the pending catch-up first
(:func:`after_catch_up`), so a change made while closed is always recorded as its own
``external`` checkpoint on top of the head it was made against: never folded into the next
tool call's checkpoint, never taken for an unrecorded change by a restore.

The walk cannot tell a change made while closed from one made after the open but before it
runs: both are ``external``. So a caller about to change the workspace itself runs the
catch-up first — the agent does, through ``record_external`` at each tool-call intent; a
server runs :meth:`Engine.catch_up` through its gate right after its first answer.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, Protocol, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R")


class CatchUpHost(Protocol):
    @property
    def catch_up_pending(self) -> bool: ...

    def catch_up(self) -> object: ...


def after_catch_up(method: Callable[P, R]) -> Callable[P, R]:
    """Run the host's pending catch-up (if any) before ``method`` (a method of a
    :class:`CatchUpHost`). A catch-up that fails (a full disk) stays pending and the error
    propagates: the method does not run on a workspace whose external changes are unrecorded."""

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        host = cast(CatchUpHost, args[0])
        if host.catch_up_pending:
            host.catch_up()
        return method(*args, **kwargs)

    return run


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: an open allocates ~50k manifest entries (acyclic),
    and the collections they trigger would traverse them over and over (half of a warm open)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
