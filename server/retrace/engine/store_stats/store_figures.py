"""The store's figures (:class:`~retrace.engine.models.StoreStats`): what ``retrace stats`` prints
and the status bar's ``retrace/stats`` answer holds — one builder, so the two cannot disagree.

Built from the journals' fold (:func:`~retrace.engine.store_stats.journal_fold.fold`, through a
:class:`~retrace.engine.store_stats.journal_reader.JournalReader`) and the storage measure
(:func:`~retrace.engine.store_stats.storage_usage.usage`), the same as the metrics and the Health
panel:

* ``sessions`` — the session journals on disk;
* ``checkpoints`` — the intact ``checkpoint`` lines (a damaged or unsealed line is left out of
  every view; the verifier reports it); ``capture`` — their capture times (baselines left out);
* ``totalBytes`` — the storage the Health panel draws and the alerts compare with retention's
  ``maxBytes`` (subagent stores included, the remote cache not); ``journalBytes`` its journals;
* ``restores`` / ``restoresSucceeded`` / ``restore`` — the ``restore`` lines that changed or tried
  to change the workspace (applied or failed: a refusal over conflicts is the engine working as
  intended), as the metrics' restore latencies;
* ``subagents`` — each child's latest ``task`` line summed, and the bytes of ``tasks/``;
* ``blobs`` / ``blobBytes`` / ``rawBytes`` — the blob store's own count (``blob_usage``: the packs'
  index is the blob store's).

:attr:`StoreFigures.tool_calls` counts the journaled tool calls the reader kept (a reader without
the tool-call types, as :func:`read_store_stats` uses, counts none). No engine, no lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.line_stats import summarize
from retrace.engine.models import StoreStats, SubagentStats
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import TaskEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.journal_fold import METRICS_TYPES, TIMED, fold
from retrace.engine.store_stats.journal_reader import JournalReader
from retrace.engine.store_stats.storage_usage import usage


@dataclass(frozen=True)
class StoreFigures:
    stats: StoreStats
    tool_calls: int
    """Distinct (session, tool call id) pairs among the events the reader kept."""


def store_figures(
    layout: StoreLayout, blob_usage: tuple[int, int, int], reader: JournalReader
) -> StoreFigures:
    """The figures of the store at ``layout`` (``blob_usage``: the blob store's ``(count, bytes
    on disk, raw bytes)``), its journals read through ``reader``."""
    sessions = layout.session_ids()
    facts = fold((sid, reader.events(layout.journal(sid))) for sid in sessions)
    used = usage(layout)
    timed = [r for r in facts.restores if r.outcome in TIMED and r.duration_s is not None]
    blobs, blob_bytes, raw_bytes = blob_usage
    stats = StoreStats(
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
        restores_succeeded=sum(r.outcome == "applied" for r in timed),
        subagents=subagent_stats(facts.tasks.values(), used.subagents),
    )
    return StoreFigures(stats=stats, tool_calls=len(facts.tool_calls))


def read_store_stats(layout: StoreLayout, blobs: BlobStore) -> StoreStats:
    """The figures read once (``retrace stats``, tests): a fresh reader of the metrics' event
    types only (tool-call lines, most of a journal, are not decoded)."""
    return store_figures(layout, blobs.usage(), JournalReader(METRICS_TYPES)).stats


def read_store_stats_of(workspace: Path, store_dir: Path) -> StoreStats:
    """``retrace stats``: the store of ``workspace`` checked as any reader checks it (outside the
    workspace, initialised, this workspace's), then its figures read once from the files — no
    engine opened, no history replayed, no lock (the status bar's figures come from the files
    too). ``workspace``: resolved."""
    layout = StoreLayout(store_dir)
    layout.check_outside(workspace)
    layout.existing_meta(workspace)
    return read_store_stats(layout, BlobStore(layout.blobs))


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def subagent_stats(last_events: Iterable[TaskEvent], disk: int) -> SubagentStats:
    """Sum the children's latest ``task`` events (their state and metrics)."""
    out = SubagentStats(bytes=disk)
    for ev in last_events:
        out.started += 1
        out.by_status[ev.status] = out.by_status.get(ev.status, 0) + 1
        out.conflicts += len(ev.conflicts)
        out.max_parallel = max(out.max_parallel, int(_number(ev.metrics.get("parallel"))))
        out.peak_rss_mib = max(out.peak_rss_mib, _number(ev.metrics.get("serverPeakRssMiB")))
    return out
