"""State a service keeps per server, per folder's services or per engine lives exactly as long as
its owner: a folder closed (multi-root remove, a server restarted in-process) leaves nothing
behind, and a new owner that happens to get an old one's memory address never inherits its state
(keys were ``id(owner)`` before: closed engines stayed alive through the undo memory, and a reused
id could hand a fresh server an old "last asked" time or restore record)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

from retrace.bootstrap import Services
from retrace.engine import Engine
from retrace.lsp.services import restore_flight, restore_undo


class FakeServer:
    """Stands in for the server object: only its identity matters to this state."""


def test_the_undo_memory_does_not_keep_a_closed_engine_alive(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    engine = Engine.open(ws, tmp_path / "store")
    assert restore_undo._last(engine) is None  # read from the journals once, then remembered
    gone = weakref.ref(engine)
    engine.close()
    del engine
    gc.collect()
    assert gone() is None, "the undo memory kept a closed engine (and its store) alive"


def test_per_server_reason_and_restore_lock_die_with_their_server() -> None:
    server = FakeServer()
    lock = restore_undo.restore_lock(server)  # type: ignore[arg-type]
    assert restore_undo.restore_lock(server) is lock  # type: ignore[arg-type]
    gone = weakref.ref(server)
    del server
    gc.collect()
    assert gone() is None
    fresh = FakeServer()
    assert restore_undo.restore_lock(fresh) is not lock  # type: ignore[arg-type]


def test_a_restore_in_flight_is_per_services_object_and_nothing_is_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    engine = Engine.open(ws, tmp_path / "store")
    try:
        one = Services(ws, engine, None, None)  # type: ignore[arg-type]
        two = Services(ws, engine, None, None)  # type: ignore[arg-type]
        with restore_flight.holding(one):
            assert restore_flight.in_flight(one) and not restore_flight.in_flight(two)
            with restore_flight.holding(one):
                assert restore_flight.in_flight(one)
            assert restore_flight.in_flight(one)
        assert not restore_flight.in_flight(one)
        gone = weakref.ref(one)
        with restore_flight.holding(one):
            pass
        del one
        gc.collect()
        assert gone() is None
    finally:
        engine.close()


def test_restore_lock_is_an_asyncio_lock_per_server() -> None:
    a, b = FakeServer(), FakeServer()
    assert isinstance(restore_undo.restore_lock(a), asyncio.Lock)  # type: ignore[arg-type]
    assert restore_undo.restore_lock(a) is not restore_undo.restore_lock(b)  # type: ignore[arg-type]
