"""The engines' settings as a feature: a settings change gives every open folder's engine the
new capture rules and retention (:func:`retrace.lsp.folder_settings.apply_to_engines`, which
compares what changed itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp import folder_settings
from retrace.lsp.feature_lifecycle import Feature

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer
    from retrace.protocol.models import ServerSettings


class EngineRulesFeature(Feature):
    name = "engine_settings"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        await folder_settings.apply_to_engines(self.server, previous, current)
