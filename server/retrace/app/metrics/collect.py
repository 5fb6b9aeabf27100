"""The one builder of a store's metrics, for the server and ``retrace metrics`` alike.

:func:`collect` reads only files (journals, the store's directories, the lock's refusal count,
the remotes' local sync state): no engine, no lock, so a CLI beside a running server reads the
same store and gets the same numbers. :func:`snapshot` is the structured form
(``retrace/metrics/get``, ``retrace metrics --json``); ``exposition.py`` the Prometheus form.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from pathlib import Path

from retrace.app.metrics.cleanups import read_totals
from retrace.app.metrics.collected import Collected
from retrace.app.metrics.storage import Series, alert_level
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.lock import refusals
from retrace.engine.store_stats.journal_fold import NO_REASON, Facts, fold
from retrace.engine.store_stats.journal_reader import READER, JournalReader
from retrace.engine.store_stats.storage_usage import usage
from retrace.protocol.metrics import (
    AutoCleanupView,
    CheckpointCounts,
    MetricsSnapshot,
    RemoteLag,
    SlowCheckpoint,
    StoragePoint,
    StorageView,
)
from retrace.sync.errors import RemoteError
from retrace.sync.service import RemoteService

log = logging.getLogger(__name__)

SAMPLES = 1000
"""Latency samples a snapshot carries (the newest)."""


def collect(
    store_dir: Path,
    workspace: Path,
    budget_bytes: int,
    *,
    record: bool = True,
    reader: JournalReader = READER,
) -> Collected:
    """Everything the metrics say about the store at ``store_dir``; ``record`` adds the current
    storage to the time series (at most one point a minute); ``reader``: the process's reader
    (shared with the status bar's figures) unless the caller reads once."""
    layout = StoreLayout(store_dir)
    facts = fold((sid, reader.events(layout.journal(sid))) for sid in layout.session_ids())
    used = usage(layout)
    series = Series(layout)
    points = series.add(used.total) if record else series.read()
    return Collected(
        workspace=str(workspace),
        budget_bytes=budget_bytes,
        facts=facts,
        usage=used,
        series=points,
        lock_refusals=refusals(layout.lock),
        remotes=_remote_lags(store_dir, workspace),
        cleanups=read_totals(layout),
    )


def _remote_lags(store_dir: Path, workspace: Path) -> list[RemoteLag]:
    service = RemoteService(store_dir, workspace)
    out: list[RemoteLag] = []
    try:
        for config in service.remotes():
            status = service.status(config.name)
            age = None
            if status.last_push:
                age = max(0.0, datetime.now().astimezone().timestamp() - _epoch(status.last_push))
            out.append(
                RemoteLag(remote=config.name, seconds_since_push=age, pending_bytes=status.pending_bytes)
            )
    except (RemoteError, OSError) as exc:
        log.info("remote sync state left out of the metrics: %s", exc)
    return out


def _epoch(iso: str) -> float:
    stamp = datetime.fromisoformat(iso)
    return stamp.timestamp() if stamp.tzinfo else stamp.astimezone().timestamp()


def checkpoint_counts(facts: Facts) -> CheckpointCounts:
    by_kind: Counter[str] = Counter()
    for (_session, kind), n in facts.checkpoints.items():
        by_kind[kind] += n
    successes = sum(facts.checkpoints.values())
    failures = sum(facts.failures.values())
    attempts = successes + failures
    return CheckpointCounts(
        attempts=attempts,
        successes=successes,
        failures=failures,
        success_ratio=successes / attempts if attempts else None,
        by_kind=dict(by_kind),
    )


def snapshot(c: Collected, *, text: bool = True) -> MetricsSnapshot:
    """The structured snapshot (with the Prometheus text when ``text``)."""
    f = c.facts
    by_mode: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    conflicts: Counter[str] = Counter()
    for r in f.restores:
        for resolution, n in r.conflicts:
            conflicts[resolution] += n
        if r.outcome == "applied":
            by_mode[r.mode] += 1
            by_reason[f.reason_of(r)] += 1
    used, budget = c.usage.total, c.budget_bytes
    out = MetricsSnapshot(
        workspace=c.workspace,
        storage=StorageView(
            used_bytes=used,
            budget_bytes=budget,
            ratio=used / budget if budget > 0 else 0.0,
            alert=alert_level(used, budget),
            by_kind=c.usage.by_kind(),
            series=[StoragePoint(ts=t, bytes=b) for t, b in c.series],
        ),
        checkpoints=checkpoint_counts(f),
        capture_seconds=f.capture_s[-SAMPLES:],
        restore_seconds=f.restore_latencies()[-SAMPLES:],
        restores_by_mode=dict(by_mode),
        restores_by_reason=dict(by_reason),
        conflicts_by_resolution=dict(conflicts),
        checkpoints_per_turn=list(f.per_turn.values()),
        slowest=[
            SlowCheckpoint(
                checkpoint_id=s.checkpoint_id, session_id=s.session, kind=s.kind, capture_seconds=s.capture_s
            )
            for s in f.slowest
        ],
        lock_refusals=c.lock_refusals,
        subagent_peak_rss_bytes=f.subagent_peak_rss_bytes,
        remotes=c.remotes,
        auto_cleanup=AutoCleanupView(
            runs=c.cleanups.runs,
            checkpoints_dropped=c.cleanups.checkpoints_dropped,
            subagent_stores_dropped=c.cleanups.subagent_stores_dropped,
            bytes_freed=c.cleanups.bytes_freed,
        ),
    )
    if text:
        from retrace.app.metrics.exposition import prometheus_text

        out.text = prometheus_text(c)
    return out


__all__ = ["NO_REASON", "Collected", "checkpoint_counts", "collect", "snapshot"]
