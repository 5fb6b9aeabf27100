"""The one error of remote sync: :class:`RemoteError`, one line, never a secret in it."""

from __future__ import annotations

from retrace.engine.errors import RetraceError


class RemoteError(RetraceError):
    """A remote operation failed (configuration, network, missing object). The message is one
    line naming the remote and what failed; credentials and keys never appear in it. The CLI
    exits 2 on it."""

    code = "remoteError"
