"""The per-turn git mirror (``retrace.git.mirrorTurns``) as a feature: at each turn end of a
folder whose services are open, :func:`retrace.lsp.services.git_mirror.turn_ended` (which never
fails the turn)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.notifications import TurnFinished
from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.services import git_mirror

if TYPE_CHECKING:
    from retrace.agent.notifications import CheckpointCreated, EventBase
    from retrace.lsp.server import RetraceServer


class TurnMirrorFeature(Feature):
    name = "git_mirror"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        ready = self.server.services_if_ready()
        if ready is not None and isinstance(event, TurnFinished):
            await git_mirror.turn_ended(self.server, ready, event.session_id)
