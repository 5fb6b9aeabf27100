"""Whether an agent turn runs that a restore would race, in whichever folder the restore is for.

The agent is the first folder's and works in every folder of a multi-root workspace
(:mod:`retrace.agent.folders`): a restore in another folder (a checkpoint, a file, a hunk) must
wait for the first folder's running turns as well as for its own folder's. One folder: exactly
the old rule (that folder's sessions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.engine.errors import RetraceError
from retrace.lsp.rpc import FOLDER

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.services.port import ServerPort


def _refusal(session_id: str) -> RetraceError:
    return RetraceError(f"the agent is running in session {session_id}; cancel it before restoring")


async def refuse_while_running(server: ServerPort, services: Services) -> None:
    """Refuse (:class:`RetraceError`) while a turn runs that could write the folder of this call."""
    for session_id in await services.run(lambda e: e.sessions()):
        if services.agent.running(session_id):
            raise _refusal(session_id)
    if FOLDER.get() is None:
        return
    token = FOLDER.set(None)
    try:
        first = server.services_if_ready()  # the first folder's: its agent works here too
    finally:
        FOLDER.reset(token)
    if first is not None and first is not services:
        for session_id in sorted(first.agent.running_sessions()):
            raise _refusal(session_id)
