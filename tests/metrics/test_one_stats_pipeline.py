"""One stats pipeline: the status bar's ``retrace/stats`` figures come from the same incremental
journal fold as the metrics and the Health panel (``app/metrics``), so

* (a) the two views agree on the same store through checkpoints, turns, restores and damage
  (one rule: a damaged or unsealed line is left out of both; the verifier reports it);
* (b) after the first answer, each answer parses only the journal bytes appended since the
  previous one, and never reads a journal whole again;
* (c) a stats request folds no session conversation (lazy session loading stays lazy).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agent.conftest import HarnessFactory
from tests.agent.test_lazy_sessions import _turn

from retrace.app.metrics.collect import collect, snapshot
from retrace.app.metrics.status_figures import status_figures
from retrace.app.restore import record_reason
from retrace.bootstrap import Services
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.line_stats import summarize
from retrace.engine.store import cursor, event_log
from retrace.engine.store.events import ToolCallIntentEvent, ToolCallResultEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.journal_fold import fold, slim
from retrace.lsp.services import timeline
from retrace.protocol.metrics import MetricsSnapshot
from retrace.protocol.models import StatsResult

BUDGET = 1 << 30


def _health(store: Path, ws: Path) -> MetricsSnapshot:
    return snapshot(collect(store, ws, BUDGET, record=False), text=False)


def _status(store: Path) -> StatsResult:
    return status_figures(StoreLayout(store), blob_usage=(0, 0, 0))


def _agree(status: StatsResult, health: MetricsSnapshot) -> None:
    s = status.store
    assert s.checkpoints == health.checkpoints.successes
    assert s.total_bytes == health.storage.used_bytes
    assert s.journal_bytes == health.storage.by_kind["journals"]
    assert s.capture.count == len(health.capture_seconds)
    assert s.restore.count == len(health.restore_seconds) == s.restores
    code_restores = sum(n for mode, n in health.restores_by_mode.items() if mode != "conversation")
    assert s.restores_succeeded == code_restores
    drawn = summarize([x * 1000 for x in health.capture_seconds])
    assert (s.capture.p50_ms, s.capture.p95_ms) == pytest.approx((drawn.p50_ms, drawn.p95_ms), abs=0.01)


def _tool_call(engine: Engine, n: int) -> None:
    call = f"toolu_{n}"
    engine.append_event(ToolCallIntentEvent(id=call, tool="read_file", input={"path": "a.txt"}, turn_id="t"))
    engine.append_event(ToolCallResultEvent(id=call, tool="read_file", status="ok", output="x" * 50))


def _damage_a_checkpoint_line(journal: Path) -> None:
    """Flip one byte inside the first checkpoint line (same length: its checksum no longer holds)."""
    data = bytearray(journal.read_bytes())
    at = data.index(b'"type":"checkpoint"')
    line_end = data.index(b"\n", at)
    digit = data.index(b'"captureMs":', at, line_end) + len(b'"captureMs":')
    data[digit] = ord("7") if data[digit] != ord("7") else ord("8")
    journal.write_bytes(bytes(data))


def test_status_bar_and_health_panel_agree_through_a_history(tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    with Engine.open(ws, store, session_id="s1", config=EngineConfig()) as engine:
        _agree(_status(store), _health(store, ws))
        first = engine.head.id
        for n in range(1, 4):
            (ws / "a.txt").write_text(f"{n}\n")
            edited = engine.checkpoint(f"edit {n}", None)
            _tool_call(engine, n)
            _agree(_status(store), _health(store, ws))
        assert edited is not None
        outcome = engine.restore(first)
        assert outcome.kind == "applied" and outcome.checkpoint is not None
        record_reason(engine, outcome.checkpoint.id, "wrongApproach", "code")
        (ws / "a.txt").write_text("dirty\n")
        refused = engine.restore(edited.id)  # a conflict: not a restore the success rate counts
        assert refused.kind == "conflict"
        status = _status(store)
        _agree(status, _health(store, ws))
        assert (status.store.restores, status.store.restores_succeeded, status.success_rate) == (1, 1, 1.0)
        assert status.tool_calls == 3
        assert status.store.sessions == 1
        before = status.store.checkpoints
    journal = StoreLayout(store).journal("s1")
    _damage_a_checkpoint_line(journal)
    status = _status(store)
    _agree(status, _health(store, ws))
    assert status.store.checkpoints == before - 1  # a damaged line is left out of both
    with journal.open("ab") as f:  # an unsealed line after sealed ones: damage, left out of both
        f.write(b'{"type":"toolCallIntent","id":"toolu_x","tool":"bash","input":{}}\n')
    status = _status(store)
    _agree(status, _health(store, ws))
    assert status.tool_calls == 3


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Bytes of new complete lines each cursor read handed over; a whole-journal read fails."""
    sizes: list[int] = []
    original = cursor.read_increment

    def read_increment(path: Path, mark: Any, **kw: Any) -> Any:
        inc = original(path, mark, **kw)
        if inc is not None:
            sizes.append(len(inc.new))
        return inc

    monkeypatch.setattr(cursor, "read_increment", read_increment)
    yield sizes


def test_each_answer_reads_only_what_the_journals_gained(
    tmp_path: Path, counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    with Engine.open(ws, store, session_id="s1", config=EngineConfig()) as engine:
        journal = StoreLayout(store).journal("s1")
        _status(store)
        assert sum(counted) == journal.stat().st_size  # the first answer reads it all, once

        def whole(*args: Any, **kw: Any) -> Any:
            raise AssertionError("a stats answer read a journal whole")

        for n in range(1, 9):
            size = journal.stat().st_size
            (ws / "a.txt").write_text(f"{n}\n")
            engine.checkpoint(f"edit {n}", None)
            _tool_call(engine, n)
            grown = journal.stat().st_size - size
            counted.clear()
            with monkeypatch.context() as m:
                m.setattr(event_log, "read", whole)
                status = _status(store)
            assert sum(counted) == grown
            assert status.store.checkpoints == n + 1 and status.tool_calls == n


async def test_a_stats_request_folds_no_session(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = await make_harness([])
    for s in range(3):
        _turn(h.engine, f"ses_{s}", 1, crash=False)
    h = h.reopen()
    await h.service.load()
    h = h.reopen()
    await h.service.load()  # every session settled: none folded
    in_replay = len(h.service.replay)  # the tool calls of the sessions folded so far
    read: list[str] = []
    original = Engine.events

    def events(self: Engine, session_id: str | None = None, *a: Any, **kw: Any) -> Any:
        read.append(session_id or self.session_id)
        return original(self, session_id, *a, **kw)

    monkeypatch.setattr(Engine, "events", events)
    services = Services(workspace=h.engine.workspace, engine=h.engine, gate=h.service.gate, agent=h.service)
    result = await timeline.stats(services)
    assert result.tool_calls == 3
    assert not [s for s in read if s.startswith("ses_")]
    assert len(h.service.replay) == in_replay == 0


def test_the_fold_counts_each_tool_call_once_and_a_reader_keeps_no_payload() -> None:
    intent = ToolCallIntentEvent(id="c1", tool="write_file", input={"content": "x" * 1000})
    result = ToolCallResultEvent(id="c1", tool="write_file", status="ok", output="y" * 1000)
    orphan = ToolCallResultEvent(id="c2", tool="bash", status="interrupted")  # a result alone counts
    facts = fold([("s1", [intent, result, orphan]), ("s2", [intent])])
    assert facts.tool_calls == {("s1", "c1"), ("s1", "c2"), ("s2", "c1")}
    slimmed = [slim(e) for e in (intent, result)]
    assert [e.id for e in slimmed if isinstance(e, ToolCallIntentEvent | ToolCallResultEvent)] == ["c1", "c1"]
    assert "x" * 10 not in repr(slimmed) and "y" * 10 not in repr(slimmed)
    assert fold([("s1", slimmed)]).tool_calls == {("s1", "c1")}
