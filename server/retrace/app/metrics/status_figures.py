"""The status bar's store figures (``retrace/stats``): the one stats pipeline
(:func:`~retrace.engine.store_stats.store_figures.store_figures`, shared with ``retrace stats``)
read through the process's incremental reader
(:data:`~retrace.engine.store_stats.journal_reader.READER`, one journal cursor each, so an answer
after a timeline change parses only the lines appended since the previous one), the same reader,
fold and storage measure as ``retrace/metrics/get`` and the Health panel: the views cannot
disagree. This module only adds what the wire answer holds beside the store's figures:

* ``successRate`` — applied restores over restores (none: ``null``);
* ``toolCalls`` — the journaled tool calls (at most the replay buffer's capacity), counted
  without folding any conversation (lazy session loading stays lazy).

Reads only files (no engine, no lock), like :func:`~retrace.app.metrics.collect.collect`.
"""

from __future__ import annotations

from retrace.agent.recent_calls import CAPACITY
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.journal_reader import READER
from retrace.engine.store_stats.store_figures import store_figures
from retrace.protocol.models import StatsResult


def status_figures(layout: StoreLayout, blob_usage: tuple[int, int, int]) -> StatsResult:
    """The ``retrace/stats`` answer for the store at ``layout`` (``blob_usage``: the blob store's
    ``(count, bytes on disk, raw bytes)``)."""
    figures = store_figures(layout, blob_usage, READER)
    store = figures.stats
    return StatsResult(
        store=store,
        success_rate=store.restores_succeeded / store.restores if store.restores else None,
        tool_calls=min(figures.tool_calls, CAPACITY),
    )
