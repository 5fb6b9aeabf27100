"""Automatic cleanup, service level, on a real engine: never while a turn runs; after an idle
stretch it collects once (the head kept); nothing when retention drops nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from retrace.engine import Engine
from retrace.engine.config import EngineConfig, RetentionPolicy
from retrace.lsp.services import auto_gc

T = TypeVar("T")


@dataclass
class Agent:
    turn_running: bool = False

    def running(self, _session_id: str) -> bool:
        return self.turn_running


@dataclass(eq=False)  # as the real Services: hashed by identity (per-services state is a weak map)
class Services:
    engine: Engine
    agent: Agent = field(default_factory=Agent)

    async def run(self, call: Callable[[Engine], T]) -> T:
        return call(self.engine)


@dataclass
class Metrics:
    checks: int = 0

    async def check(self) -> None:
        self.checks += 1


@dataclass
class Server:
    sent: list[tuple[str, Any]] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)

    def send_notification(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    ws = tmp_path / "ws"
    ws.mkdir()
    retention = RetentionPolicy(max_checkpoints=3, idle_minutes=0.001)
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False, retention=retention)) as e:
        for i in range(8):
            (ws / "f.txt").write_text(f"v{i}\n")
            e.checkpoint(f"edit {i}", ["f.txt"], kind="tool", tool="edit_file")
        yield e


async def test_never_while_a_turn_runs(engine: Engine) -> None:
    services = Services(engine, Agent(turn_running=True))
    count = len(engine.timeline())
    assert await auto_gc.cleanup_if_due(Server(), services, "test") is None  # type: ignore[arg-type]
    assert len(engine.timeline()) == count


async def test_an_idle_stretch_collects_once_and_keeps_the_head(engine: Engine) -> None:
    head = engine.head.id
    services, server = Services(engine), Server()
    runs = auto_gc.RUNS.runs
    watch = asyncio.create_task(auto_gc.watch_idle(server, services, poll_s=0.01))  # type: ignore[arg-type]
    try:
        for _ in range(500):
            if auto_gc.RUNS.runs > runs:
                break
            await asyncio.sleep(0.01)
    finally:
        watch.cancel()
    assert auto_gc.RUNS.runs == runs + 1
    assert len(engine.timeline()) <= 3 and engine.head.id == head
    assert [m for m, _ in server.sent] == ["retrace/timeline/didChange"]
    assert server.metrics.checks == 1, "the storage alerts are measured again"
    assert await auto_gc.cleanup_if_due(server, services, "again") is None  # type: ignore[arg-type]


async def test_idle_minutes_zero_never_starts_a_watch(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    config = EngineConfig(watcher=False, retention=RetentionPolicy(idle_minutes=0))
    with Engine.open(ws, tmp_path / "store", config=config) as e:
        await asyncio.wait_for(auto_gc.watch_idle(Server(), Services(e)), 1)  # type: ignore[arg-type]
