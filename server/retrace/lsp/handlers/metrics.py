"""Handlers: ``retrace/metrics/get``, ``retrace/health/get``, ``retrace/restore/reason`` and
``retrace/store/gc``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.app.restore_sequence import record_restore_reason
from retrace.lsp.services import store_health
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.health import HealthView
from retrace.protocol.metrics import (
    MetricsGetParams,
    MetricsSnapshot,
    RestoreReasonParams,
    RestoreReasonResult,
    StoreGcResult,
)
from retrace.protocol.models import EmptyParams

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def metrics_get(ls: RetraceServer, params: MetricsGetParams) -> MetricsSnapshot:
    await ls.services()
    return await ls.metrics.snapshot(text=params.text)


async def health_get(ls: RetraceServer, params: EmptyParams) -> HealthView:
    await ls.services()
    return await ls.metrics.health()


async def restore_reason(ls: RetraceServer, params: RestoreReasonParams) -> RestoreReasonResult:
    require_trusted(ls, "Recording a restore reason")
    services = await ls.services()
    event = await record_restore_reason(services.gate, params.checkpoint_id, params.reason, params.mode)
    return RestoreReasonResult(checkpoint_id=event.checkpoint_id, reason=event.reason)


async def store_gc(ls: RetraceServer, params: EmptyParams) -> StoreGcResult:
    require_trusted(ls, "Garbage collection")
    report = await store_health.collect_garbage(ls, await ls.services())
    await ls.metrics.check()
    return StoreGcResult(report=report)


HANDLERS: dict[str, Handler] = {
    "retrace/metrics/get": metrics_get,
    "retrace/health/get": health_get,
    "retrace/restore/reason": restore_reason,
    "retrace/store/gc": store_gc,
}
