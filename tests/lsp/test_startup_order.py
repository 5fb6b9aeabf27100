"""Start-up's background work waits for the first timeline answer.

The store's quick check, the storage measure and the model SDK's import run on threads; begun
with the services they took the interpreter from the first ``retrace/timeline/tree`` answer the
user waits for (seconds of CPU on a store of hundreds of sessions). They begin once that answer
is sent, or :data:`~retrace.lsp.startup.BACKGROUND_AFTER_S` after start-up when no client asks.
Checked on the real ``start_services`` and handler, with the background work's entry points
recording when they run."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from retrace.engine.models import VerifyReport
from retrace.lsp import startup
from retrace.lsp.handlers.checkpoint import timeline_tree
from retrace.lsp.main import create_server
from retrace.lsp.server import RetraceServer
from retrace.lsp.services import store_health
from retrace.protocol.models import InitializationOptions
from retrace.protocol.timeline import TimelineTreeParams

TREE = TimelineTreeParams.model_validate({"outline": True, "maxRows": 500})


@pytest.fixture
def began(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What background work began, in order ("tree" marks the first answer)."""
    log: list[str] = []
    monkeypatch.setattr(store_health, "start_background_check", lambda *_a: log.append("verify"))
    monkeypatch.setattr(
        "retrace.lsp.services.metrics.ServerMetrics.schedule_check", lambda _self: log.append("measure")
    )

    class Timer:
        def __init__(self, _delay: float, _fn: Any) -> None:
            self.daemon = False

        def start(self) -> None:
            log.append("sdk")

    monkeypatch.setattr(startup.threading, "Timer", Timer)
    return log


async def _start(tmp_path: Path) -> RetraceServer:
    ws = tmp_path / "ws"
    if not ws.exists():
        ws.mkdir()
        (ws / "a.py").write_text("x = 1\n")
    server = create_server()
    options = InitializationOptions(store_dir=str(tmp_path / "store"))
    server.startup = asyncio.ensure_future(startup.start_services(server, ws, options))
    await server.startup
    return server


async def test_the_background_work_begins_after_the_first_tree(
    tmp_path: Path, began: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup, "BACKGROUND_AFTER_S", 30.0)
    server = await _start(tmp_path)
    try:
        for _ in range(5):
            await asyncio.sleep(0.02)
        assert began == []  # the services are up; nothing in the background yet
        answer = await timeline_tree(server, TREE)
        began.append("tree")
        assert answer.sessions  # the baseline's story
        for _ in range(250):
            if len(began) == 4:
                break
            await asyncio.sleep(0.02)
        assert began == ["tree", "verify", "measure", "sdk"]
    finally:
        startup.shutdown(server)


async def test_a_failed_first_tree_also_releases_it(
    tmp_path: Path, began: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup, "BACKGROUND_AFTER_S", 30.0)
    server = await _start(tmp_path)
    try:
        unknown = TimelineTreeParams.model_validate({"sessionId": "ses_none", "maxRows": 5})
        with pytest.raises(Exception, match="unknown session id"):
            await timeline_tree(server, unknown)
        for _ in range(250):
            if began:
                break
            await asyncio.sleep(0.02)
        assert began[:1] == ["verify"]
    finally:
        startup.shutdown(server)


async def test_without_a_tree_request_it_begins_after_the_wait(
    tmp_path: Path, began: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(startup, "BACKGROUND_AFTER_S", 0.2)
    server = await _start(tmp_path)
    try:
        assert began == []
        for _ in range(500):
            if len(began) == 3:
                break
            await asyncio.sleep(0.02)
        assert began == ["verify", "measure", "sdk"]
        assert not server.first_answer.is_set()
    finally:
        startup.shutdown(server)


def test_an_exit_does_not_wait_for_the_start_up_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's loop closes (``asyncio.run`` returns: what an ``exit`` does) while the
    start-up check of a large store is still reading; a damage report still reaches the log."""
    release = threading.Event()
    started = threading.Event()

    def slow_verify(*_a: Any, **_k: Any) -> Any:
        started.set()
        release.wait(60)
        raise RuntimeError("the check went on after the exit")

    monkeypatch.setattr(store_health, "verify_store", slow_verify)
    server = create_server()

    async def serve_then_exit() -> None:
        store_health.start_background_check(server, tmp_path)
        await asyncio.to_thread(started.wait, 10)

    began = time.monotonic()
    asyncio.run(serve_then_exit())
    assert time.monotonic() - began < 30 and not release.is_set()
    release.set()


async def test_the_start_up_check_reports_its_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = VerifyReport(ok=True, quick=True)

    class Verified:
        def __init__(self) -> None:
            self.report = report

    monkeypatch.setattr(store_health, "verify_store", lambda *_a, **_k: Verified())
    assert await store_health.background_check(create_server(), tmp_path) == report

    def broken(*_a: Any, **_k: Any) -> Any:
        raise OSError("unreadable")

    monkeypatch.setattr(store_health, "verify_store", broken)
    assert await store_health.background_check(create_server(), tmp_path) is None


async def test_changes_made_while_closed_are_caught_up_after_the_first_tree(
    tmp_path: Path, began: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open leaves the catch-up walk pending (the first answer does not wait for it); once
    the first tree is sent, the walk records what changed while closed as its own ``external``
    checkpoint and the client is told, exactly once."""
    monkeypatch.setattr(startup, "BACKGROUND_AFTER_S", 30.0)
    first = await _start(tmp_path)
    startup.shutdown(first)
    (tmp_path / "ws" / "a.py").write_text("x = 2  # changed while closed\n")
    (tmp_path / "ws" / "b.py").write_text("new\n")
    server = await _start(tmp_path)
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(server, "send_notification", lambda m, p=None: sent.append((m, p)))
    try:
        services = await server.services()
        assert services.engine.catch_up_pending  # the open did not walk
        before = services.engine.head.id
        await timeline_tree(server, TREE)
        for _ in range(250):
            if not services.engine.catch_up_pending and sent:
                break
            await asyncio.sleep(0.02)
        head = services.engine.head
        assert head.id != before and head.kind == "external"
        assert sorted(f.path for f in head.files) == ["a.py", "b.py"]
        changes = [p for m, p in sent if m == "retrace/timeline/didChange"]
        assert len(changes) == 1 and changes[0].head == head.id
    finally:
        startup.shutdown(server)
