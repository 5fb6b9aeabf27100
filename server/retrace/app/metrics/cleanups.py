"""The automatic cleanup's running totals (``lsp/services/auto_gc.py``), kept where the metrics
read them: ``<store>/cache/auto-cleanup.json`` (runs, checkpoints dropped, subagent stores
dropped, bytes freed). Written by the server after each automatic run, read by
:func:`retrace.app.metrics.collect.collect` (no engine, no lock), so ``retrace/metrics/get``,
``retrace metrics`` and the health view show the same numbers and a restart keeps them. A cache:
lost or damaged means counting from zero again, never an error.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from retrace.engine.models import GcReport
from retrace.engine.store.cache_file import read_cache_json, write_cache_json
from retrace.engine.store.layout import StoreLayout

_LOCK = threading.Lock()


@dataclass(frozen=True)
class CleanupTotals:
    runs: int = 0
    checkpoints_dropped: int = 0
    subagent_stores_dropped: int = 0
    bytes_freed: int = 0

    def plus(self, report: GcReport) -> CleanupTotals:
        return CleanupTotals(
            runs=self.runs + 1,
            checkpoints_dropped=self.checkpoints_dropped + report.checkpoints_dropped,
            subagent_stores_dropped=self.subagent_stores_dropped + report.subagent_stores_dropped,
            bytes_freed=self.bytes_freed + report.bytes_freed,
        )


def _parse(raw: Any) -> CleanupTotals:
    values = {k: raw[k] for k in ("runs", "checkpoints_dropped", "subagent_stores_dropped", "bytes_freed")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values.values()):
        raise ValueError("negative or non-integer count")
    return CleanupTotals(**values)


def read_totals(layout: StoreLayout) -> CleanupTotals:
    return (
        read_cache_json(layout.cache / "auto-cleanup.json", _parse, "automatic cleanup totals")
        or CleanupTotals()
    )


def add_run(layout: StoreLayout, report: GcReport) -> CleanupTotals:
    """Count one automatic run; the new totals."""
    with _LOCK:
        totals = read_totals(layout).plus(report)
        body = {
            "runs": totals.runs,
            "checkpoints_dropped": totals.checkpoints_dropped,
            "subagent_stores_dropped": totals.subagent_stores_dropped,
            "bytes_freed": totals.bytes_freed,
        }
        write_cache_json(layout.cache / "auto-cleanup.json", body, "automatic cleanup totals")
    return totals
