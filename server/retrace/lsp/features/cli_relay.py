"""The command line's relay of the first folder as a feature: it listens once the services hold
the store (:func:`retrace.lsp.services.relay.start`; the CLI's checkpoints reach the client as the
agent's events do) and closes before the engine releases the store, so no relayed call reaches a
closed engine. Further folders' relays belong to :mod:`retrace.lsp.folders`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.host import LspAgentHost
from retrace.lsp.services import relay

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer


class CliRelayFeature(Feature):
    name = "relay"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def start(self, services: Services) -> None:
        self.server.relay = relay.start(self.server, services, LspAgentHost(self.server).emit)

    def stop(self, wait_s: float) -> None:
        relay.stop(self.server.relay)  # RelayServer.close is idempotent
