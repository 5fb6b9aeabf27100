"""Workspace trust, as the editor reported it in ``initializationOptions.trusted``.

An untrusted workspace gets a read-only timeline: browsing checkpoints, diffs and conversations
works; anything that runs the agent or changes files (agent turns, restores, undo, summaries) is
refused with :class:`WorkspaceUntrusted`. The editor restarts the server once trust is granted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.engine.errors import RetraceError

if TYPE_CHECKING:
    from retrace.lsp.services.port import ServerPort


class WorkspaceUntrusted(RetraceError):  # noqa: N818 (contract names)
    code = "workspaceUntrusted"

    def __init__(self, action: str) -> None:
        super().__init__(
            f"{action} is not available in an untrusted workspace: the timeline is read-only until you "
            "trust this folder (Manage Workspace Trust)"
        )
        self.action = action


def require_trusted(server: ServerPort, action: str) -> None:
    """Refuse ``action`` (a capitalised phrase such as "An agent turn") when the workspace is untrusted."""
    if not server.trusted:
        raise WorkspaceUntrusted(action)
