"""What one collection found: the journals' facts, the storage, the lock and sync state."""

from __future__ import annotations

from dataclasses import dataclass, field

from retrace.app.metrics.cleanups import CleanupTotals
from retrace.engine.store_stats.journal_fold import Facts
from retrace.engine.store_stats.storage_usage import Usage
from retrace.protocol.metrics import RemoteLag


@dataclass
class Collected:
    workspace: str
    budget_bytes: int
    facts: Facts
    usage: Usage
    series: list[tuple[float, int]]
    lock_refusals: int
    remotes: list[RemoteLag] = field(default_factory=list)
    cleanups: CleanupTotals = field(default_factory=CleanupTotals)
    """The automatic cleanup's totals (``cache/auto-cleanup.json``)."""
