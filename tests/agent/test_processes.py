"""Processes a tool command starts end with the call (issue 25, item 9), however they daemonize:
``setsid``, ``nohup``, a double fork with ``setsid()``, ``( … & )``, ``disown``. Real shells,
real processes: each daemon appends to a file every 50 ms; once the call returned, no process of
it is alive and the file stops changing. SIGTERM first (a trap's clean-up runs), SIGKILL after
the grace (a process ignoring SIGTERM)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from tests.process_support import alive

from retrace.agent import processes
from retrace.agent.terminal import TerminalSession
from retrace.agent.tools import execute
from retrace.agent.tools.base import ToolContext
from retrace.engine.config import EngineConfig

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not Path("/proc").is_dir(), reason="reads /proc")

LOOP = "while :; do date +%s%N >> {f}; sleep 0.05; done"
PY = sys.executable


def _daemon_commands(f: Path) -> dict[str, str]:
    loop = LOOP.format(f=f)
    double_fork = (
        f'{PY} -c "import os,time\n'
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "os.closerange(0, 3)\n"
        f"while True:\n open('{f}','a').write('x\\n'); time.sleep(0.05)\""
    )
    return {
        "setsid": f"setsid sh -c '{loop}' >/dev/null 2>&1 < /dev/null &",
        "setsid-holding-stdout": f"setsid sh -c '{loop}' &",
        "nohup": f"nohup sh -c '{loop}' >/dev/null 2>&1 &",
        "double-fork": double_fork,
        "subshell": f"( sh -c '{loop}' >/dev/null 2>&1 & )",
        "disown": f"sh -c '{loop}' >/dev/null 2>&1 & disown",
    }


def ctx_for(tmp_path: Path, terminal: bool) -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        engine_config=EngineConfig(),
        command_timeout_s=30.0,
        terminal=TerminalSession() if terminal else None,
    )


def _with_marker(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _stops_changing(f: Path, quiet_s: float = 0.4) -> bool:
    before = f.stat().st_size if f.exists() else -1
    time.sleep(quiet_s)
    return (f.stat().st_size if f.exists() else -1) == before


@pytest.mark.parametrize("terminal", [False, True], ids=["plain", "session-shell"])
@pytest.mark.parametrize("style", list(_daemon_commands(Path("x"))))
async def test_a_daemon_of_a_call_ends_with_the_call(tmp_path: Path, style: str, terminal: bool) -> None:
    f = tmp_path / f"ticks-{style}.txt"
    command = _daemon_commands(f)[style] + "\nsleep 0.3; echo started"
    t0 = time.monotonic()
    result = await execute("run_command", {"command": command}, ctx_for(tmp_path, terminal))
    took = time.monotonic() - t0
    assert f.exists() and f.stat().st_size > 0, "the daemon ran"
    assert _with_marker(str(f)) == [], f"{style}: a process of the call outlived it"
    assert _stops_changing(f), f"{style}: the file still changes after the call"
    assert "stopped" in result.output and "SIGTERM" in result.output, result.output
    assert "background=true" in result.output
    assert took < 30.0 - 1, "the call did not wait for its timeout"


async def test_a_trap_gets_to_clean_up_and_an_ignorer_is_killed_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "STOP_GRACE_S", 0.8)
    ticks, cleaned, stubborn = tmp_path / "ticks", tmp_path / "cleaned", tmp_path / "stubborn"
    polite = f"trap 'echo bye > {cleaned}; exit 0' TERM; {LOOP.format(f=ticks)}"
    rude = f"trap '' TERM; {LOOP.format(f=stubborn)}"
    command = f'setsid sh -c "{polite}" >/dev/null 2>&1 &\nsetsid sh -c "{rude}" >/dev/null 2>&1 &\nsleep 0.3'
    t0 = time.monotonic()
    result = await execute("run_command", {"command": command}, ctx_for(tmp_path, False))
    took = time.monotonic() - t0
    assert cleaned.read_text() == "bye\n", "SIGTERM came first and the trap ran"
    assert _with_marker(str(ticks)) == [] and _with_marker(str(stubborn)) == []
    assert _stops_changing(stubborn)
    assert "SIGKILL" in result.output, result.output
    assert took >= 0.3 + 0.8 - 0.05, "the SIGTERM-ignoring process had its grace"


async def test_a_call_that_leaves_nothing_says_nothing_and_waits_for_nothing(tmp_path: Path) -> None:
    t0 = time.monotonic()
    result = await execute("run_command", {"command": "echo hi"}, ctx_for(tmp_path, True))
    assert result.output == "hi\n[exit code 0]"
    assert time.monotonic() - t0 < 1.5


async def test_the_token_is_not_part_of_the_terminal_state(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path, True)
    result = await execute(
        "run_command", {"command": f"unset {processes.CALL_TOKEN_VARIABLE}; export A=1"}, ctx
    )
    assert not result.is_error, result.output
    assert ctx.terminal is not None
    state = ctx.terminal.state
    assert processes.CALL_TOKEN_VARIABLE not in state.env and processes.CALL_TOKEN_VARIABLE not in state.unset


def test_stop_in_flight_ends_registered_commands(tmp_path: Path) -> None:
    import os
    import subprocess

    f = tmp_path / "ticks"
    identity = processes.Identity(processes.CALL_TOKEN_VARIABLE, "tok-" + os.urandom(8).hex())
    env = {**os.environ, identity.variable: identity.token}
    subprocess.run(["sh", "-c", f"setsid sh -c '{LOOP.format(f=f)}' >/dev/null 2>&1 &"], env=env, check=True)
    processes.register(identity)
    deadline = time.monotonic() + 5
    while not f.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    stopped = processes.stop_in_flight(grace_s=1.0)
    assert [s.signal for s in stopped] and all(s.signal == "SIGTERM" for s in stopped)
    assert _with_marker(str(f)) == []
    assert processes.stop_in_flight() == []


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("123 (bash) S 1 123 123 0 -1", ("S", 123, 123)),
        ("77 (my (odd) name) R 5 80 81 0", ("R", 80, 81)),
        ("9 (x y) S 1", None),
        ("garbage", None),
    ],
)
def test_parse_stat(line: str, parsed: tuple[str, int, int] | None) -> None:
    got = processes.parse_stat(line)
    assert (None if got is None else (got.state, got.pgid, got.sid)) == parsed


async def test_a_background_tasks_daemons_run_with_it_and_end_with_its_stop(tmp_path: Path) -> None:
    from retrace.agent.background import BackgroundTasks

    class Host:
        async def emit(self, event: object) -> None:
            pass

    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    f, cleaned = tmp_path / "ticks", tmp_path / "cleaned"
    polite = f"trap 'echo bye > {cleaned}; exit 0' TERM; {LOOP.format(f=f)}"
    ctx = ToolContext(workspace=tmp_path, engine_config=EngineConfig(), background=tasks.launcher("s1"))
    started = await execute(
        "run_command",
        {"command": f'setsid sh -c "{polite}" >/dev/null 2>&1 & sleep 300', "background": True},
        ctx,
    )
    handle = started.output.split(" as ")[1].split()[0]
    for _ in range(250):
        if f.exists():
            break
        await asyncio.sleep(0.02)
    assert not _stops_changing(f, 0.3), "the daemon runs on while its task runs (after its call ended)"
    await tasks.stop(handle)
    assert _with_marker(str(f)) == [] and _stops_changing(f)
    assert cleaned.read_text() == "bye\n"


async def test_a_background_tasks_daemons_end_when_its_shell_exits(tmp_path: Path) -> None:
    from retrace.agent.background import BackgroundTasks

    class Host:
        async def emit(self, event: object) -> None:
            pass

    tasks = BackgroundTasks(Host())  # type: ignore[arg-type]
    f = tmp_path / "ticks"
    ctx = ToolContext(workspace=tmp_path, engine_config=EngineConfig(), background=tasks.launcher("s1"))
    started = await execute(
        "run_command",
        {"command": f"setsid sh -c '{LOOP.format(f=f)}' >/dev/null 2>&1 & sleep 0.5", "background": True},
        ctx,
    )
    handle = started.output.split(" as ")[1].split()[0]
    pump = tasks.get(handle).pump
    assert pump is not None
    await asyncio.wait({pump}, timeout=10)
    assert tasks.get(handle).ended
    assert _with_marker(str(f)) == [] and _stops_changing(f)


RUN_SCRIPT = """
import asyncio, sys
from pathlib import Path
from retrace.cli.run import run_task
code = asyncio.run(run_task(Path(sys.argv[1]), Path(sys.argv[2]), "start things", session_id=None,
                            permission="auto", out=sys.stdout))
sys.exit(code)
"""


def test_retrace_run_leaves_no_process_behind(tmp_path: Path) -> None:
    """Across the real boundary: ``retrace run`` in a process of its own, a model (the fake API
    over HTTP) that daemonizes in a foreground call and starts a background command with a
    daemon of its own; once the run exited nothing of either runs and no file changes."""
    import os
    import subprocess

    from tests.reliability.inputs_support import scripted_model

    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store"
    fg, bg = ws / "fg-ticks.txt", ws / "bg-ticks.txt"
    calls = [
        {"name": "run_command", "input": {"command": _daemon_commands(fg)["setsid"] + "\nsleep 0.3"}},
        {
            "name": "run_command",
            "input": {"command": _daemon_commands(bg)["double-fork"] + "\nsleep 300", "background": True},
        },
        {"name": "run_command", "input": {"command": "sleep 0.5"}},
    ]
    model = scripted_model(
        [
            {"match": {"lastUserTextContains": "start things"}, "text": "Starting.", "toolCalls": calls},
            {"text": "Done."},
        ],
        name="daemons",
    )
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "k",
        "RETRACE_FAKE_MODEL": "",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUN_SCRIPT, str(ws), str(store)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        model.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fg.exists() and bg.exists(), proc.stdout
    assert _with_marker(str(fg)) == [] and _with_marker(str(bg)) == [], proc.stdout
    assert _stops_changing(fg) and _stops_changing(bg)
    journals = "".join(j.read_text() for j in store.rglob("*.jsonl"))
    assert "process(es) the command left running" in journals, "the result said what was stopped"


CRASH_SCRIPT = """
import asyncio, sys
from pathlib import Path
from retrace.agent.background import BackgroundTasks
from retrace.agent.tools import execute
from retrace.agent.tools.base import ToolContext
from retrace.engine.config import EngineConfig

class Host:
    async def emit(self, event):
        pass

async def main():
    tasks = BackgroundTasks(Host(), Path(sys.argv[2]))
    ctx = ToolContext(workspace=Path(sys.argv[1]), engine_config=EngineConfig(),
                      background=tasks.launcher("s1"), command_timeout_s=600)
    await execute("run_command", {"command": sys.argv[3]}, ctx)

asyncio.run(main())
"""


def test_a_call_running_when_the_server_dies_is_ended_by_the_next_start(tmp_path: Path) -> None:
    import signal
    import subprocess

    from retrace.agent.background import BackgroundTasks

    class Host:
        async def emit(self, event: object) -> None:
            pass

    f = tmp_path / "ticks"
    record = tmp_path / "store" / "runtime" / "background.json"
    command = _daemon_commands(f)["setsid"] + "\nsleep 300"
    server = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(tmp_path), str(record), command])
    try:
        deadline = time.monotonic() + 20
        while not (f.exists() and record.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert f.exists() and record.exists(), "the call runs and is recorded"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    assert _with_marker(str(f)) != [], "the daemon outlived the dead server"
    tasks = BackgroundTasks(Host(), record)  # type: ignore[arg-type]
    ended = tasks.end_leftovers()
    assert [r.is_call for r in ended] == [True]
    assert _with_marker(str(f)) == [] and _stops_changing(f)
    assert not record.exists()
    news = tasks.news("s1")
    assert news is not None and "was still running when the Retrace server exited" in news
