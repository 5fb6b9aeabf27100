"""The headless holder's shared rules in one process (``retrace.relay.holder``): the opt-out and
idle settings, the markers, and the writer's open that asks only a marked lock holder to let go."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from retrace.cli import holder as holder_cli
from retrace.engine import Engine
from retrace.relay import holder


class LockedError(Exception):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"store is locked (pid {pid})")
        self.pid = pid


@pytest.mark.parametrize(
    ("value", "enabled"), [(None, True), ("", True), ("0", True), ("1", False), ("yes", False)]
)
def test_the_opt_out(monkeypatch: pytest.MonkeyPatch, value: str | None, enabled: bool) -> None:
    if value is None:
        monkeypatch.delenv(holder.NO_HOLDER_ENV, raising=False)
    else:
        monkeypatch.setenv(holder.NO_HOLDER_ENV, value)
    assert holder.enabled() is enabled


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, holder.IDLE_S), ("2.5", 2.5), ("0", holder.IDLE_S), ("-3", holder.IDLE_S), ("nan", holder.IDLE_S),
     ("soon", holder.IDLE_S), ("1e9", holder.IDLE_S)],
)  # fmt: skip
def test_the_idle_time(monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float) -> None:
    if value is None:
        monkeypatch.delenv(holder.IDLE_ENV, raising=False)
    else:
        monkeypatch.setenv(holder.IDLE_ENV, value)
    assert holder.idle_seconds() == seconds


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    return int(proc.stdout)


def test_markers_name_holders_and_dead_ones_are_cleared(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    mine = holder.mark(store)
    assert mine == holder.marker_path(store, os.getpid()) and mine.exists()
    assert holder.is_holder(store, os.getpid())
    assert not holder.is_holder(store, None) and not holder.is_holder(store, 0)
    dead = _dead_pid()
    holder.marker_path(store, dead).write_bytes(b"")
    (store / "runtime" / "holder-notapid").write_bytes(b"")
    holder.clear_stale(store)
    assert mine.exists()
    assert not holder.marker_path(store, dead).exists()
    assert (store / "runtime" / "holder-notapid").exists()  # not ours to judge
    assert not holder.alive(dead) and holder.alive(os.getpid())


def test_a_lock_held_by_anyone_but_a_holder_is_reported_at_once(tmp_path: Path) -> None:
    calls: list[int] = []

    def open_store() -> str:
        calls.append(1)
        raise LockedError(os.getpid())  # no marker: the editor's server, or another command

    with pytest.raises(LockedError):
        holder.open_releasing(open_store, tmp_path, LockedError)
    assert calls == [1]
    with pytest.raises(LockedError):
        holder.open_releasing(lambda: (_ for _ in ()).throw(LockedError(None)), tmp_path, LockedError)


def test_a_dead_holders_lock_is_opened_again(tmp_path: Path) -> None:
    # A marked holder that is gone by the time it is asked: its lock died with it; open again.
    dead = _dead_pid()
    holder.marker_path(tmp_path, dead).parent.mkdir()
    holder.marker_path(tmp_path, dead).write_bytes(b"")
    attempts: list[int] = []

    def open_store() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise LockedError(dead)
        return "opened"

    assert holder.open_releasing(open_store, tmp_path, LockedError) == "opened"
    assert len(attempts) == 2


def test_other_errors_pass_through(tmp_path: Path) -> None:
    def open_store() -> str:
        raise ValueError("not a lock")

    with pytest.raises(ValueError, match="not a lock"):
        holder.open_releasing(open_store, tmp_path, LockedError)


def test_a_cold_call_slipping_in_after_a_release_is_waited_for(tmp_path: Path) -> None:
    # Released holder, then a cold command-line call holds the lock for a moment: try again.
    dead = _dead_pid()
    holder.marker_path(tmp_path, dead).parent.mkdir()
    holder.marker_path(tmp_path, dead).write_bytes(b"")
    locks = [LockedError(dead), LockedError(os.getpid()), LockedError(os.getpid())]

    def open_store() -> str:
        if locks:
            raise locks.pop(0)
        return "opened"

    assert holder.open_releasing(open_store, tmp_path, LockedError) == "opened"
    # ... but not forever: a lock that stays taken is reported after the timeout.
    stuck = [LockedError(dead)]

    def never() -> str:
        raise stuck.pop(0) if stuck else LockedError(os.getpid())

    with pytest.raises(LockedError):
        holder.open_releasing(never, tmp_path, LockedError, timeout=0.3)


async def test_a_call_reaching_a_closed_engine_is_answered_gone(tmp_path: Path) -> None:
    # The holder closed its engine while a call was on its way: the answer says "gone" (the
    # caller opens the store itself), even when the method wrapped the refusal in its own error.
    import asyncio

    from retrace.engine.engine import Engine
    from retrace.engine.errors import RetraceError
    from retrace.engine.gate import EngineGate
    from retrace.lsp.services import relay as table
    from retrace.relay import wire
    from retrace.relay.server import MethodError, Request

    ws = tmp_path / "ws"
    ws.mkdir()
    engine = Engine.open(ws, tmp_path / "store")
    ctx = table.RelayContext(EngineGate(engine), ws)
    loop = asyncio.get_running_loop()

    async def wrapping(ctx: table.RelayContext, params: table.ReleaseParams) -> dict[str, object]:
        try:
            await ctx.run(lambda engine: engine.head)
        except Exception as exc:  # as a method that turns every failure into its own error
            raise RetraceError(f"internal error: {exc}") from exc
        return {}

    methods = table.bind(ctx, loop)
    wrapped = table._bridge(ctx, loop, "wrapped", table.RelayMethod(table.ReleaseParams, wrapping))
    request = Request("checkpoint", {}, str(tmp_path / "store"), None)
    assert "checkpoint" in await asyncio.to_thread(methods["checkpoint"], request)
    await ctx.close_engine()
    for call in (methods["checkpoint"], wrapped):
        with pytest.raises(MethodError) as refused:
            await asyncio.to_thread(call, request)
        assert refused.value.code == wire.GONE
    assert ctx.in_flight == 0


def test_a_cold_call_on_a_store_a_holder_is_opening_waits_for_its_relay(
    tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lock's holder is marked (a holder opening the store): the cold path is tried once,
    # then the call waits for the relay and is forwarded; no second lock attempt.
    import threading

    from retrace.cli import forward
    from retrace.engine.errors import StoreLocked
    from retrace.relay.server import RelayServer

    monkeypatch.setenv(holder.NO_HOLDER_ENV, "1")
    store, ws = tmp_path / "store", tmp_path / "ws"
    store.mkdir()
    ws.mkdir()
    holder.mark(store)
    attempts: list[int] = []

    def cold() -> int:
        attempts.append(1)
        raise StoreLocked("store is locked", os.getpid())

    server = RelayServer(store, {"checkpoint": lambda request: {"checkpoint": {"id": "from-the-holder"}}})
    late = threading.Timer(0.6, server.start)  # the holder's relay comes up a moment later
    late.start()
    try:
        result, value = forward.relayed(store, ws, "checkpoint", {}, cold)
    finally:
        late.join()
        server.close()
    assert result == {"checkpoint": {"id": "from-the-holder"}} and value is None
    assert attempts == [1]


def test_a_store_replaced_as_the_relay_comes_up_is_still_noticed(
    tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the holder holds is what it opened: a store replaced by a copy right after the relay
    starts listening (a caller may see the holder ready then) is noticed, not adopted as its own.
    Before, the identities were taken after the relay came up, so a copy put in place in between
    was taken for the held store and the holder held the moved one until it was idle."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n", "utf-8")
    store = tmp_path / "store"
    with Engine.open(workspace, store) as engine:
        engine.checkpoint("first")
    monkeypatch.setenv(holder.IDLE_ENV, "20")
    real_listen = holder_cli.listen

    def listen_then_replace(*args: Any) -> Any:
        relay = real_listen(*args)
        store.rename(tmp_path / "moved")
        shutil.copytree(tmp_path / "moved", store)
        return relay

    monkeypatch.setattr(holder_cli, "listen", listen_then_replace)
    handlers = list(logging.getLogger().handlers)
    started = time.monotonic()
    try:
        assert holder_cli.main(["--workspace", str(workspace), "--store", str(store)]) == 0
    finally:
        for handler in logging.getLogger().handlers:
            if handler not in handlers:
                logging.getLogger().removeHandler(handler)
                handler.close()
    said = (tmp_path / "moved" / "runtime" / "holder.log").read_text("utf-8")
    assert "was deleted or replaced" in said, said
    assert time.monotonic() - started < 15, "noticed at once, not after the idle time"
