"""The status bar's store figures (``retrace/stats``), from the metrics' own incremental fold.

One pipeline: the figures are built from the same per-journal events
(:data:`~retrace.app.metrics.journals.READER`, one journal cursor each, so an answer after a
timeline change parses only the lines appended since the previous one) and the same
:func:`~retrace.app.metrics.journal_fold.fold` and storage measure
(:func:`~retrace.app.metrics.storage.usage`) as ``retrace/metrics/get`` and the Health panel, so
the two views cannot disagree:

* ``checkpoints`` — the intact ``checkpoint`` lines (the metrics' checkpoint successes; a damaged
  line is left out of both, the verifier reports it);
* ``totalBytes`` — the storage the Health panel draws and the alerts compare with retention's
  ``maxBytes`` (subagent stores included, the remote cache not); ``journalBytes`` its journals;
* ``restores`` / ``restoresSucceeded`` / ``restore`` — the ``restore`` lines that changed or tried
  to change the workspace (applied or failed), as the metrics' restore latencies;
* ``toolCalls`` — the journaled tool calls (at most the replay buffer's capacity), counted
  without folding any conversation (lazy session loading stays lazy);
* ``blobs`` / ``blobBytes`` / ``rawBytes`` — the blob store's own count (``blob_usage``: the
  packs' index is the engine's).

Reads only files (no engine, no lock), like :func:`~retrace.app.metrics.collect.collect`.
"""

from __future__ import annotations

from retrace.agent.recent_calls import CAPACITY
from retrace.app.metrics.journal_fold import TIMED, fold
from retrace.app.metrics.journals import READER
from retrace.app.metrics.storage import usage
from retrace.engine.gc import subagent_stats
from retrace.engine.line_stats import summarize
from retrace.engine.models import StoreStats
from retrace.engine.store.layout import StoreLayout
from retrace.protocol.models import StatsResult


def status_figures(layout: StoreLayout, blob_usage: tuple[int, int, int]) -> StatsResult:
    """The ``retrace/stats`` answer for the store at ``layout`` (``blob_usage``: the blob store's
    ``(count, bytes on disk, raw bytes)``)."""
    sessions = layout.session_ids()
    facts = fold((sid, READER.events(layout.journal(sid))) for sid in sessions)
    used = usage(layout)
    timed = [r for r in facts.restores if r.outcome in TIMED and r.duration_s is not None]
    succeeded = sum(r.outcome == "applied" for r in timed)
    blobs, blob_bytes, raw_bytes = blob_usage
    store = StoreStats(
        checkpoints=sum(facts.checkpoints.values()),
        sessions=len(sessions),
        blobs=blobs,
        blob_bytes=blob_bytes,
        raw_bytes=raw_bytes,
        journal_bytes=used.journals,
        total_bytes=used.total,
        capture=summarize([s * 1000 for s in facts.capture_s]),
        restore=summarize([r.duration_s * 1000 for r in timed if r.duration_s is not None]),
        restores=len(timed),
        restores_succeeded=succeeded,
        subagents=subagent_stats(facts.tasks.values(), used.subagents),
    )
    return StatsResult(
        store=store,
        success_rate=succeeded / len(timed) if timed else None,
        tool_calls=min(len(facts.tool_calls), CAPACITY),
    )
