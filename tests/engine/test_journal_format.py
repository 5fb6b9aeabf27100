"""Format stability: a store written by the journal-v1 code (``tests/fixtures/journal-v1``,
committed, never edited) is read by this version forever — every line parses into the typed
journal union, the engine loads every checkpoint with no problem, restores them, and the agent's
conversation and the verifier read it too."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.oracles import file_bytes

from retrace.engine import Engine, EngineConfig
from retrace.engine.store.events import LEGACY_VERSION, CheckpointEvent, event_json, parse_event
from retrace.engine.store.layout import StoreLayout
from retrace.engine.verify import verify_store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "journal-v1"
CONFIG = EngineConfig(watcher=False)


@pytest.fixture
def v1(tmp_path: Path) -> tuple[Path, Path]:
    ws, store = tmp_path / "ws", tmp_path / "store"
    shutil.copytree(FIXTURE / "workspace", ws)
    shutil.copytree(FIXTURE, store, ignore=shutil.ignore_patterns("workspace", "README.md"))
    meta = json.loads((store / "store.json").read_text())
    (store / "store.json").write_text(json.dumps({**meta, "workspace": str(ws.resolve())}))
    return ws, store


def _lines() -> list[dict[str, object]]:
    return [
        json.loads(line)
        for journal in sorted((FIXTURE / "sessions").glob("*/journal.jsonl"))
        for line in journal.read_text().splitlines()
    ]


ADDED_SINCE_V1: dict[str, Any] = {
    "approximate": False,
    "cacheCreationInputTokens": 0,
    "cacheReadInputTokens": 0,
    "checkpointId": None,
    "codeFrom": None,
    "headCheckpoint": None,
    "conflicts": {},
    "counted": True,
    "mode": None,
    "origin": None,
    "parentDelta": None,
    "summarized": None,
    "terminal": None,
}
"""Fields added to stored models after v1, with the default an old line means."""


def _held(new: Any, old: Any) -> Any:
    """``new`` without what ``old`` never held: ``v`` and :data:`ADDED_SINCE_V1` defaults."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {
            k: _held(v, old.get(k))
            for k, v in new.items()
            if k in old or not (k == "v" or ADDED_SINCE_V1.get(k, object()) == v)
        }
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_held(a, b) for a, b in zip(new, old, strict=True)]
    return new


def test_every_v1_line_parses_into_the_typed_union() -> None:
    raw = _lines()
    kinds = Counter(str(r["type"]) for r in raw)
    assert set(kinds) == {
        "checkpoint",
        "turn",
        "message",
        "usage",
        "toolCallIntent",
        "toolCallResult",
        "conversationHead",
        "restoreIntent",
        "restoreDone",
        "restore",
    }
    for r in raw:
        event = parse_event(r)
        assert event is not None, r["type"]
        assert event.v == LEGACY_VERSION  # absent on v1 lines means 1
        again = event_json(event)
        # Round trip: nothing a v1 line held is lost (only ``v`` and fields that later versions
        # added with their defaults may appear).
        assert _held(again, r) == r
        assert parse_event(again) == event


def test_the_engine_loads_and_restores_a_v1_store(v1: tuple[Path, Path]) -> None:
    ws, store = v1
    with Engine.open(ws, store, config=CONFIG, readonly=True) as ro:
        assert ro.problems == []
        timeline = ro.timeline()
        assert len(timeline) == 14 and all(cp.damage is None for cp in timeline)
        sessions = ro.sessions()
        typed = [e for sid in sessions for e in ro.events(sid)]
        assert sum(isinstance(e, CheckpointEvent) for e in typed) == len(timeline)
    before = file_bytes(ws)
    with Engine.open(ws, store, config=CONFIG) as eng:
        head = eng.head.id
        for cp in eng.timeline():
            assert eng.restore(cp.id, force=True).kind in ("applied", "nothingToRestore")
        eng.restore(head, force=True)
    after = file_bytes(ws)
    assert after == before
    assert verify_store(StoreLayout(store)).report.ok


async def test_the_agent_reads_a_v1_conversation(v1: tuple[Path, Path]) -> None:
    from retrace.agent.headless import PrintingHost
    from retrace.agent.session import AgentService

    ws, store = v1
    import io

    with Engine.open(ws, store, config=CONFIG) as eng:
        service = AgentService(eng, PrintingHost(io.StringIO(), "deny"), client_factory=lambda _s: None)
        await service.load()
        sid = next(s for s in eng.sessions() if s.startswith("ses_"))
        view = await service.conversation(sid)
        assert len(view.messages) > 10
