"""The command line's expected errors and how they read: light on purpose (no engine, no
pydantic), because ``main`` imports it before it knows which command runs."""

from __future__ import annotations

from retrace.engine.errors import RetraceError, StoreNotInitialised

REMOTE_ERROR_EXIT = 2
"""Exit code of a :class:`~retrace.sync.errors.RemoteError` (``retrace remote``)."""


class CliError(Exception):
    """A bad input the engine never sees (missing workspace, missing optional component)."""


def explain(exc: RetraceError) -> str:
    """The engine's one-line message, plus the next step when there is an obvious one."""
    message = str(exc) or type(exc).__name__
    if isinstance(exc, StoreNotInitialised) and "retrace init" not in message:
        message += "; run 'retrace init' first"
    return message
