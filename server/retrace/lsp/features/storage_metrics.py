"""The storage metrics as a feature (:class:`retrace.lsp.services.metrics.ServerMetrics`, kept
on the server for the ``retrace/metrics/get`` and ``retrace/health/get`` handlers): served once
the services are open (the first measure waits for the first answer), measured again at a turn's
end and after checkpoints (at most every ``CHECK_EVERY_S``), the endpoint moved and the storage
measured again when the metrics or retention settings change, the endpoint closed at shutdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.notifications import CheckpointCreated, TurnFinished
from retrace.lsp.feature_lifecycle import Feature

if TYPE_CHECKING:
    from retrace.agent.notifications import EventBase
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer
    from retrace.protocol.models import ServerSettings


class StorageMetricsFeature(Feature):
    name = "metrics"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def start(self, services: Services) -> None:
        self.server.metrics.start(services.engine.store_dir, services.workspace, check=False)

    async def after_first_answer(self, services: Services) -> None:
        self.server.metrics.schedule_check()

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        if isinstance(event, TurnFinished):
            if self.server.services_if_ready() is not None:
                self.server.metrics.schedule_check()
        elif isinstance(event, CheckpointCreated):
            self.server.metrics.checkpoint_created()

    async def on_settings(self, previous: ServerSettings, current: ServerSettings) -> None:
        if previous.metrics != current.metrics or previous.retention != current.retention:
            self.server.metrics.apply_port()
            await self.server.metrics.check()

    def stop(self, wait_s: float) -> None:
        self.server.metrics.stop()
