"""The pure cores of the metrics: the journal fold, alert levels and crossings, histogram
buckets, conflict endings; the journal round trip of the new events."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from retrace.app.metrics.exposition import histogram_buckets
from retrace.app.metrics.storage import Crossings, Series, alert_level
from retrace.app.restore import record_reason
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, CheckpointKind, FileOutcome
from retrace.engine.restore.restorer import conflict_endings
from retrace.engine.store.events import (
    CheckpointEvent,
    CheckpointFailedEvent,
    ConversationHeadEvent,
    JournalEvent,
    RestoreReasonEvent,
    RestoreStatsEvent,
    TaskEvent,
    event_json,
    parse_event,
)
from retrace.engine.store.journal import seal_event
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.journal_fold import fold


def cp(cid: str, kind: CheckpointKind, ms: float = 0.0, turn: str | None = None) -> CheckpointEvent:
    checkpoint = Checkpoint(
        id=cid,
        parent=None,
        session_id="s",
        kind=kind,
        created_at=datetime.now(UTC),
        capture_ms=ms,
        turn_id=turn,
    )
    return CheckpointEvent(checkpoint=checkpoint, delta=None, snapshot=None)


def test_fold_counts_what_the_journals_say() -> None:
    s1: list[JournalEvent] = [
        cp("b", "baseline", 50.0),
        cp("t1", "tool", 10.0, "turn1"),
        cp("t2", "tool", 30.0, "turn1"),
        CheckpointFailedEvent(kind="tool", error="disk full", tool_call_id="c3", turn_id="turn1"),
        cp("t3", "background", 20.0, "turn2"),
        RestoreStatsEvent(duration_ms=120.0, kind="applied", target_id="t1", mode="code", checkpoint_id="r1"),
        RestoreStatsEvent(
            duration_ms=80.0,
            kind="conflict",
            target_id="t1",
            mode="code",
            conflicts={"unresolved": 2},
        ),
        RestoreStatsEvent(
            duration_ms=300.0,
            kind="applied",
            target_id="t2",
            mode="both",
            checkpoint_id="r2",
            conflicts={"overwrite": 1, "skip": 1},
        ),
        ConversationHeadEvent(head="m1", reason="restore", checkpoint_id="t2"),  # the half of "both"
        ConversationHeadEvent(head="m0", reason="restore", checkpoint_id="t1"),  # conversation only
        ConversationHeadEvent(head=None, reason="compaction"),
        RestoreReasonEvent(checkpoint_id="r1", reason="wrongApproach"),
        RestoreReasonEvent(checkpoint_id="r1", reason="brokeTests"),  # the last one given wins
        RestoreReasonEvent(checkpoint_id="t1", reason="offTrack"),
        TaskEvent(task_id="k", call_id="c", status="merged", metrics={"serverPeakRssMiB": 100.0}),
        TaskEvent(task_id="k2", call_id="c2", status="merged", metrics={"serverPeakRssMiB": 150.0}),
    ]
    f = fold([("s", s1), ("other", [cp("o", "tool", 5.0, "turn3")])])
    assert f.checkpoints == {
        ("s", "baseline"): 1,
        ("s", "tool"): 2,
        ("s", "background"): 1,
        ("other", "tool"): 1,
    }
    assert dict(f.failures) == {("s", "tool"): 1}
    assert sorted(f.capture_s) == [0.005, 0.01, 0.02, 0.03]  # baselines left out
    assert dict(f.per_turn) == {"turn1": 2, "turn2": 1, "turn3": 1}
    got = sorted((r.mode, r.outcome, f.reason_of(r)) for r in f.restores)
    assert got == [
        ("both", "applied", "none"),
        ("code", "applied", "brokeTests"),
        ("code", "conflict", "offTrack"),  # keyed by its target: no restore checkpoint
        ("conversation", "applied", "offTrack"),
    ]
    assert sorted(f.restore_latencies()) == [0.12, 0.3]  # the conflict refusal is no restore latency
    assert f.subagent_peak_rss_bytes == 150.0 * 1024 * 1024
    assert [s.checkpoint_id for s in f.slowest][:2] == ["t2", "t3"]


@pytest.mark.parametrize(
    ("used", "budget", "level"),
    [
        (0, 100, "ok"),
        (79, 100, "ok"),
        (80, 100, "warning"),
        (89, 100, "warning"),
        (90, 100, "urgent"),
        (150, 100, "urgent"),
        (10, 0, "ok"),
    ],
)
def test_alert_level(used: int, budget: int, level: str) -> None:
    assert alert_level(used, budget) == level


@pytest.mark.parametrize(
    ("levels", "alerts"),
    [
        (["ok", "warning", "warning", "urgent", "urgent"], [None, "warning", None, "urgent", None]),
        (["urgent", "urgent", "warning", "urgent"], ["urgent", None, None, "urgent"]),
        (["warning", "ok", "warning", "ok", "ok"], ["warning", None, "warning", None, None]),
        (["ok", "ok"], [None, None]),
    ],
)
def test_crossings_alert_once_per_rise(levels: list[Any], alerts: list[Any]) -> None:
    c = Crossings()
    assert [c.observe(level) for level in levels] == alerts


def test_histogram_buckets_are_cumulative() -> None:
    assert histogram_buckets([0.5, 1.5, 2.0, 7.0], (1.0, 2.0, 5.0)) == [
        ("1.0", 1.0),
        ("2.0", 3.0),
        ("5.0", 3.0),
        ("+Inf", 4.0),
    ]
    assert histogram_buckets([], (1.0,)) == [("1.0", 0.0), ("+Inf", 0.0)]


def test_conflict_endings() -> None:
    files = [
        FileOutcome(path="a", action="conflict", status="restored"),
        FileOutcome(path="b", action="conflict", status="merged"),
        FileOutcome(path="c", action="conflict", status="skipped"),
        FileOutcome(path="d", action="conflict", status="conflict"),
        FileOutcome(path="e", action="conflict", status="conflict"),
        FileOutcome(path="f", action="overwrite", status="restored"),
    ]
    assert conflict_endings(files) == {"overwrite": 1, "merge": 1, "skip": 1, "unresolved": 2}


def test_series_keeps_one_point_a_minute(tmp_path: Path) -> None:
    series = Series(StoreLayout(tmp_path))
    assert series.read() == []
    series.add(10, now=1000.0)
    series.add(20, now=1030.0)  # under a minute: not recorded
    series.add(30, now=1061.0)
    assert series.read() == [(1000.0, 10), (1061.0, 30)]
    series.path.write_text("not json")
    assert series.read() == []


def test_restore_reason_journal_round_trip(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("1\n")
    with Engine.open(ws, tmp_path / "store", session_id="s1", config=EngineConfig()) as engine:
        target = engine.head.id
        (ws / "a.txt").write_text("2\n")
        engine.checkpoint("edit", None)
        outcome = engine.restore(target)
        assert outcome.kind == "applied" and outcome.checkpoint is not None
        restore_cp = outcome.checkpoint.id
        event = record_reason(engine, restore_cp, "unwantedChanges", "code")
        stats = [e for e in engine.events("s1") if isinstance(e, RestoreStatsEvent)]
        reasons = [e for e in engine.events("s1") if isinstance(e, RestoreReasonEvent)]
        with pytest.raises(RetraceError):
            record_reason(engine, "nope-no-such-checkpoint", "other")
        with pytest.raises(RetraceError):
            engine.append_event({"type": "restoreReason", "checkpointId": restore_cp, "reason": "bored"})  # type: ignore[arg-type]
    assert reasons == [event]
    assert parse_event(reasons[0].model_dump(mode="json", by_alias=True)) == event
    [stat] = stats
    assert (stat.kind, stat.mode, stat.checkpoint_id, stat.target_id) == (
        "applied",
        "code",
        restore_cp,
        target,
    )
    facts = fold([("s1", [*stats, *reasons])])
    assert [(r.mode, facts.reason_of(r)) for r in facts.restores] == [("code", "unwantedChanges")]


def test_journal_reader_reads_on_and_starts_over_when_replaced(tmp_path: Path) -> None:
    from retrace.engine.store_stats.journal_reader import JournalReader

    path = tmp_path / "journal.jsonl"
    reader = JournalReader()
    assert reader.events(path) == []

    def line(event: JournalEvent | dict[str, Any]) -> bytes:  # as the writer seals it
        return seal_event(event_json(event)) + b"\n"

    stat1 = RestoreStatsEvent(duration_ms=5.0, kind="applied", mode="code")
    reason = RestoreReasonEvent(checkpoint_id="r", reason="other")
    quoted = [{"text": '"restore"'}]  # a message that quotes a wanted type is parsed, then left out
    message = {"type": "message", "id": "m", "parent": None, "role": "user", "content": quoted}
    path.write_bytes(line(stat1) + line(message) + line(reason)[:10])  # a torn last line
    assert reader.events(path) == [stat1]
    with path.open("ab") as f:
        f.write(line(reason)[10:])
    assert reader.events(path) == [stat1, reason]  # read on: the completed line
    path.write_bytes(line(reason))  # shorter: read again from the start
    assert reader.events(path) == [reason]
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(line(stat1) + line(stat1) + line(reason))
    os.replace(replacement, path)  # another inode, longer: read again from the start
    assert reader.events(path) == [stat1, stat1, reason]
    path.write_bytes(line(stat1) + b'{"type": "restore", "durationMs": "slow", "kind": 1}\n' + b"garbage\n")
    assert reader.events(path) == [stat1]  # bad lines are the verifier's business
    unsealed = json.dumps(stat1.model_dump(mode="json", by_alias=True)).encode() + b"\n"
    path.write_bytes(line(reason) + unsealed)  # a v2 line without its checksum: damage, left out
    assert reader.events(path) == [reason]
