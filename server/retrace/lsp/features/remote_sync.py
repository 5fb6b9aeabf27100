"""The first folder's remote sync as a feature: its scheduler starts once the engine is open,
a checkpoint or a turn's end asks for a push, new ``retrace.remote.*`` settings reach every
folder's remote, shutdown pushes what is pending within the shutdown's wait.

The remote itself is prepared by :func:`retrace.lsp.startup.start_services` before the engine
opens (its blob source is part of opening the engine); further folders' remotes belong to
:mod:`retrace.lsp.folders`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.notifications import CheckpointCreated, TurnFinished
from retrace.lsp import folder_remotes
from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.rpc import FOLDER

if TYPE_CHECKING:
    from retrace.agent.notifications import EventBase
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer
    from retrace.protocol.models import ServerSettings


class RemoteSyncFeature(Feature):
    name = "remote"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def start(self, services: Services) -> None:
        if self.server.remote is not None:
            self.server.remote.start()

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        if FOLDER.get() is not None:
            return  # a further folder's checkpoint: its own remote counts it (folder_features)
        remote = self.server.remote
        if remote is not None and isinstance(event, CheckpointCreated):
            remote.checkpoint_created()
        elif remote is not None and isinstance(event, TurnFinished):
            remote.turn_ended()

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        if previous.remote != current.remote:
            await folder_remotes.apply_all(self.server, current)

    def stop(self, wait_s: float) -> None:
        """Push what is pending (at most ``wait_s`` seconds; the push resumes at the next start)."""
        if self.server.remote is not None:
            self.server.remote.stop(wait_s)
