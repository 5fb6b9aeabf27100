"""The background task registry (:mod:`retrace.agent.background`) and the leftovers of a server
that died (:mod:`retrace.agent.leftovers`), with real processes: delivery of news once, the
boundary window, stopping whole process groups, shutdown, and never killing a stranger."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.process_support import live_group_members

from retrace.agent import background as background_module
from retrace.agent.background import BackgroundTasks
from retrace.agent.headless import background_line
from retrace.agent.leftovers import (
    TOKEN_VARIABLE,
    LeftoverRecord,
    carries_token,
    read_records,
    stat_group,
    write_records,
)
from retrace.agent.notifications import BackgroundTaskChanged, BackgroundTaskView
from retrace.agent.tools import execute
from retrace.agent.tools.base import ToolContext
from retrace.agent.tools.run_command import RunCommandInput, run
from retrace.engine.config import EngineConfig

posix_only = pytest.mark.skipif(sys.platform == "win32" or not Path("/proc").is_dir(), reason="reads /proc")


class Host:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def emit(self, event: Any) -> None:
        self.events.append(event)


@pytest.mark.parametrize(
    ("line", "group"),
    [
        ("123 (bash) S 1 123 123 0 -1", 123),
        ("77 (my (odd) name) R 5 80 80 0", 80),
        ("9 (x y) S 1", None),
        ("garbage", None),
        ("5 (a) S 1 notanumber 3", None),
    ],
)
def test_stat_group(line: str, group: int | None) -> None:
    assert stat_group(line) == group


def test_carries_token() -> None:
    env = b"PATH=/bin\0" + f"{TOKEN_VARIABLE}=abc".encode() + b"\0HOME=/x\0"
    assert carries_token(env, "abc")
    assert not carries_token(env, "ab")
    assert not carries_token(b"X=1\0", "abc")


def test_records_round_trip_and_damage(tmp_path: Path) -> None:
    path = tmp_path / "runtime" / "background.json"
    record = LeftoverRecord("bg-1", "s", "npm run dev", 123, "t", "2026-01-01T00:00:00+00:00")
    write_records(path, [record])
    assert read_records(path) == [record]
    write_records(path, [])
    assert not path.exists()
    path.parent.mkdir(exist_ok=True)
    path.write_text("{not json")
    assert read_records(path) == []


def context(tmp_path: Path, tasks: BackgroundTasks | None, session: str = "s1") -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        engine_config=EngineConfig(),
        output_cap_bytes=2000,
        background=tasks.launcher(session) if tasks is not None else None,
    )


async def start(tasks: BackgroundTasks, tmp_path: Path, command: str, session: str = "s1") -> str:
    result = await run(RunCommandInput(command=command, background=True), context(tmp_path, tasks, session))
    assert not result.is_error, result.output
    assert result.changed_paths == [], "the starting call captures nothing: its changes are the task's"
    return result.output.split(" as ")[1].split()[0]


async def ended(tasks: BackgroundTasks, handle: str) -> None:
    pump = tasks.get(handle).pump
    assert pump is not None
    await asyncio.wait({pump})


@posix_only
async def test_news_is_delivered_once_with_the_exit_status(tmp_path: Path) -> None:
    host = Host()
    tasks = BackgroundTasks(host, tmp_path / "store" / "runtime" / "background.json")  # type: ignore[arg-type]
    handle = await start(tasks, tmp_path, "printf 'hello\\n'; exit 4")
    other = await start(tasks, tmp_path, "printf 'elsewhere\\n'", session="s2")
    await ended(tasks, handle)
    await ended(tasks, other)
    news = tasks.news("s1")
    assert news is not None and f"{handle} (printf" in news and "exited with code 4" in news
    assert "hello" in news and "elsewhere" not in news
    assert tasks.news("s1") is None, "reported once"
    tasks.redeliver("s1")  # no news was carried by the last prompt: nothing to give back
    assert tasks.news("s1") is None
    assert [e.task.state for e in host.events if e.task.handle == handle] == ["running", "exited"]
    assert not (tmp_path / "store" / "runtime" / "background.json").exists()


@posix_only
@posix_only
async def test_news_of_a_withdrawn_prompt_is_reported_again(tmp_path: Path) -> None:
    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    handle = await start(tasks, tmp_path, "printf 'once\\n'")
    await ended(tasks, handle)
    first = tasks.news("s1")
    assert first is not None and "once" in first
    tasks.redeliver("s1")
    assert tasks.news("s1") == first
    assert tasks.news("s1") is None


@posix_only
async def test_output_is_capped_and_only_new_output_is_reported(tmp_path: Path) -> None:
    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    gate = tmp_path / "go"
    handle = await start(
        tasks,
        tmp_path,
        f"head -c 50000 /dev/zero | tr '\\0' x; echo; "
        f"while [ ! -e '{gate}' ]; do sleep 0.05; done; echo tail-line",
    )
    for _ in range(600):
        if tasks.get(handle).pending.total >= 50000:
            break
        await asyncio.sleep(0.05)
    first = tasks.news("s1")
    assert first is not None and "still running" in first and "bytes omitted" in first
    assert len(first) < 4000
    gate.touch()
    await ended(tasks, handle)
    second = tasks.news("s1")
    assert second is not None and "tail-line" in second and "xxxx" not in second


@posix_only
async def test_the_window_holds_a_task_until_its_end_was_captured(tmp_path: Path) -> None:
    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    assert tasks.window() == []
    gate = tmp_path / "go"
    handle = await start(tasks, tmp_path, f"while [ ! -e '{gate}' ]; do sleep 0.05; done")
    window = tasks.window()
    assert [t.handle for t in window] == [handle]
    assert tasks.label(window).startswith("background: while [ ! -e ")
    tasks.settle(window)  # captured while still running: stays in the window
    gate.touch()
    await ended(tasks, handle)
    assert [t.handle for t in tasks.window()] == [handle]
    tasks.settle(tasks.window())
    assert tasks.window() == []


@posix_only
async def test_stop_and_kill_all_end_the_whole_group(tmp_path: Path) -> None:
    record = tmp_path / "runtime" / "background.json"
    tasks = BackgroundTasks(Host(), record)  # type: ignore[arg-type]
    long = "sleep 300 & while true; do sleep 0.1; done"
    first = await start(tasks, tmp_path, long)
    pid = tasks.get(first).pid
    for _ in range(400):
        if len(live_group_members(pid)) >= 2:
            break
        await asyncio.sleep(0.05)
    assert read_records(record)[0].handle == first
    stopped = await tasks.stop(first)
    assert stopped.state == "stopped" and stopped.stopped_by == "user"
    assert live_group_members(pid) == []
    assert tasks.overlap_note() is None

    second = await start(tasks, tmp_path, long)
    note = tasks.overlap_note()
    assert note is not None and second in note
    pid2 = tasks.get(second).pid
    tasks.kill_all()
    await ended(tasks, second)
    assert live_group_members(pid2) == []
    assert not record.exists()
    assert tasks.get(second).stopped_by == "shutdown"


async def test_background_needs_a_launcher_and_no_timeout(tmp_path: Path) -> None:
    no_launcher = await execute(
        "run_command", {"command": "true", "background": True}, context(tmp_path, None)
    )
    assert no_launcher.is_error and "not available" in no_launcher.output
    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    timed = await execute(
        "run_command", {"command": "true", "background": True, "timeout_s": 5}, context(tmp_path, tasks)
    )
    assert timed.is_error and "timeout_s" in timed.output
    assert tasks.tasks() == []


@posix_only
def test_leftovers_are_killed_only_when_they_carry_their_token(tmp_path: Path) -> None:
    def spawn(token: str | None) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        if token is not None:
            env[TOKEN_VARIABLE] = token
        return subprocess.Popen(
            ["sh", "-c", "sleep 300 & wait"], env=env, start_new_session=True, stdin=subprocess.DEVNULL
        )

    ours, stranger = spawn("ours-token"), spawn(None)
    try:
        path = tmp_path / "runtime" / "background.json"
        records = [
            LeftoverRecord("bg-3", "s1", "npm run dev", ours.pid, "ours-token", "t"),
            LeftoverRecord("bg-5", "s1", "reused pid", stranger.pid, "a-token-it-never-had", "t"),
            LeftoverRecord("bg-6", "s1", "long gone", 2**22 + 12345, "x", "t"),
        ]
        write_records(path, records)
        for _ in range(400):
            if len(live_group_members(ours.pid)) >= 2:
                break
            time.sleep(0.05)
        tasks = BackgroundTasks(Host(), path)  # type: ignore[arg-type]
        assert tasks.end_leftovers() == records
        ours.wait(timeout=30)
        assert live_group_members(ours.pid) == []
        assert stranger.poll() is None and live_group_members(stranger.pid), "a stranger is never killed"
        assert not path.exists()
        news = tasks.news("s1")
        assert news is not None and "bg-3 (npm run dev" in news and "server exited" in news
    finally:
        for proc in (ours, stranger):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.mark.parametrize(
    ("state", "extra", "line"),
    [
        ("running", {}, "   background bg-2 running (pid 7): npm run dev"),
        ("exited", {"exit_code": 3}, "   background bg-2 exited (code 3) (pid 7): npm run dev"),
        ("stopped", {"stopped_by": "user"}, "   background bg-2 stopped (user) (pid 7): npm run dev"),
    ],
)
def test_the_headless_host_prints_background_starts_and_ends(
    state: str, extra: dict[str, Any], line: str
) -> None:
    view = BackgroundTaskView(
        handle="bg-2",
        session_id="s",
        command="npm run dev\nsecond line",
        pid=7,
        started_at="t",
        state=state,
        **extra,
    )
    assert background_line(BackgroundTaskChanged(session_id="s", task=view)) == line


@posix_only
async def test_records_of_tasks_ending_together_are_written_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first task's record write (still naming the second, running task) is slow; the second
    task ends meanwhile. Its write must land last, or a stale record of an ended task stays."""
    real = background_module.write_records

    def slow_while_any_runs(path: Path, records: list[Any]) -> None:
        if records:
            time.sleep(0.5)
        real(path, records)

    monkeypatch.setattr(background_module, "write_records", slow_while_any_runs)
    record = tmp_path / "store" / "runtime" / "background.json"
    tasks = BackgroundTasks(Host(), record)  # type: ignore[arg-type]
    first = await start(tasks, tmp_path, "true")
    second = await start(tasks, tmp_path, "sleep 0.2")
    await ended(tasks, first)
    await ended(tasks, second)
    assert not record.exists(), record.read_text()
