"""The terminal state rules (pure, table-tested) and ``run_command`` carrying them between calls
through a real shell on a real workspace (no engine, no model)."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.process_support import dies

from retrace.agent import terminal
from retrace.agent.terminal import (
    LEFT_UNSET,
    NOT_RECORDED,
    ShellState,
    TerminalSession,
    after_command,
    describe,
    looks_secret,
    parse_env0,
    resolve_cwd,
    revive,
    value_recorded,
)
from retrace.agent.tools import ToolContext, ToolResult, execute
from retrace.agent.tools import run_command as run_command_module
from retrace.engine.config import EngineConfig
from retrace.engine.models import TerminalState

from .conftest import make_workspace

BASE = {"HOME": "/home/u", "PATH": "/usr/bin", "LANG": "C.UTF-8", "GITHUB_TOKEN": "base-secret"}

# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    ("name", "value", "recorded"),
    [
        # the allowlist: values of known harmless variables
        ("PATH", "/usr/bin", True),
        ("VIRTUAL_ENV", "/w/.venv", True),
        ("NODE_ENV", "production", True),
        ("LC_ALL", "C.UTF-8", True),
        ("JAVA_HOME", "/opt/jdk", True),
        # an allowlisted name whose value holds a secret format: name only
        ("PATH", "https://u:hunter2@x/bin", False),
        ("PYTHONPATH", "sk_live_abcdefghijklmnop", False),
        # everything else: name only, however harmless it looks
        ("FOO", "1", False),
        ("EDITORS", "vim", False),
        ("lang", "C", False),
        ("API_TOKEN", "x", False),
        ("DATABASE_URL", "postgres://app:hunter2@db/app", False),
        ("DATABASE_URL", "postgres://db/app", False),
        ("REDIS_URL", "redis://:pw@cache:6379", False),
        ("SLACK_WEBHOOK", "https://hooks.slack.com/services/T/B/X", False),
        ("SENTRY_DSN", "https://abc@o1.ingest.sentry.io/2", False),
    ],
)
def test_only_allowlisted_values_are_recorded(name: str, value: str, recorded: bool) -> None:
    assert value_recorded(name, value) is recorded
    assert looks_secret(name, value) is not recorded


# --------------------------------------------------------------------------- the diff


@pytest.mark.parametrize(
    ("state", "start", "end", "expected"),
    [
        # export FOO=1
        (ShellState(), BASE, {**BASE, "FOO": "1"}, ShellState("", {"FOO": "1"})),
        # a change to a base variable, then setting it back to the base value: nothing recorded
        (ShellState(), BASE, {**BASE, "LANG": "fr"}, ShellState("", {"LANG": "fr"})),
        (ShellState("", {"LANG": "fr"}), {**BASE, "LANG": "fr"}, BASE, ShellState()),
        # unset a base variable; unset one the commands had set
        (
            ShellState(),
            BASE,
            {k: v for k, v in BASE.items() if k != "LANG"},
            ShellState("", {}, frozenset({"LANG"})),
        ),
        (ShellState("", {"FOO": "1"}), {**BASE, "FOO": "1"}, BASE, ShellState()),
        # setting again what was unset
        (
            ShellState("", {}, frozenset({"LANG"})),
            BASE,
            {**BASE, "LANG": "de"},
            ShellState("", {"LANG": "de"}),
        ),
        # the shell's own bookkeeping and the model credentials are never carried
        (
            ShellState(),
            BASE,
            {**BASE, "PWD": "/x", "OLDPWD": "/y", "SHLVL": "3", "_": "/bin/env"},
            ShellState(),
        ),
        (ShellState(), BASE, {**BASE, "ANTHROPIC_API_KEY": "k", "RETRACE_API_KEY_FD": "5"}, ShellState()),
        # what the login profile changed before the command (start) is not the command's change
        (ShellState(), {**BASE, "PATH": "/p:/usr/bin"}, {**BASE, "PATH": "/p:/usr/bin"}, ShellState()),
        # earlier changes are kept, the cwd untouched
        (
            ShellState("src", {"A": "1"}),
            {**BASE, "A": "1"},
            {**BASE, "A": "1", "B": "2"},
            ShellState("src", {"A": "1", "B": "2"}),
        ),
        # a name or value that is not UTF-8 cannot be recorded: not carried
        (ShellState(), BASE, {**BASE, "BAD": "\udcff"}, ShellState()),
    ],
)
def test_after_command(
    state: ShellState, start: dict[str, str], end: dict[str, str], expected: ShellState
) -> None:
    assert after_command(state, start, end, BASE) == expected


def _real(path: Path) -> str:
    return os.path.realpath(path)


def test_spawn_env_applies_the_state_to_the_base() -> None:
    state = ShellState("src", {"FOO": "1", "LANG": "fr"}, frozenset({"HOME"}))
    assert state.spawn_env(BASE) == {
        "PATH": "/usr/bin",
        "LANG": "fr",
        "GITHUB_TOKEN": "base-secret",
        "FOO": "1",
    }


def test_record_hides_secret_values_and_keeps_names() -> None:
    state = ShellState("src", {"NODE_ENV": "1", "FOO": "2", "API_TOKEN": "s3cr3t"}, frozenset({"LANG"}))
    record = state.record()
    assert record == TerminalState(
        cwd="src", env={"NODE_ENV": "1"}, hidden=["API_TOKEN", "FOO"], unset=["LANG"]
    )
    assert "s3cr3t" not in record.model_dump_json()


# --------------------------------------------------------------------------- cwd


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("", ""),
        ("src", "src"),
        ("src/deep", "src/deep"),
        ("../outside", None),
        ("src/../..", None),
        ("link-out", None),
        ("link-in", "src"),
        ("/", None),
    ],
)
def test_resolve_cwd_stays_inside_the_workspace(tmp_path: Path, where: str, expected: str | None) -> None:
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (ws / "link-out").symlink_to(tmp_path / "outside")
    (ws / "link-in").symlink_to(ws / "src")
    pwd = where if where.startswith("/") else os.path.normpath(ws / where) if where else str(ws)
    if where in ("link-out", "link-in"):
        pwd = str(ws / where)  # pwd -L: the logical path, through the link
    assert resolve_cwd(ws, pwd) == expected


# --------------------------------------------------------------------------- revive


@pytest.mark.parametrize(
    ("live", "expected_env", "expected_unset", "note"),
    [
        # no live session (a restart): the hidden variable is left unset
        (
            None,
            {"FOO": "1"},
            {"API_TOKEN"},
            f"{NOT_RECORDED}: API_TOKEN; {LEFT_UNSET}",
        ),
        # the live session has a value: kept
        (
            ShellState("", {"API_TOKEN": "live"}),
            {"FOO": "1", "API_TOKEN": "live"},
            set(),
            f"{NOT_RECORDED}: API_TOKEN; kept the session's current value",
        ),
        # the live session no longer has it: left unset
        (
            ShellState(),
            {"FOO": "1"},
            {"API_TOKEN"},
            f"{NOT_RECORDED}: API_TOKEN; {LEFT_UNSET}",
        ),
    ],
)
def test_revive_a_hidden_variable(
    live: ShellState | None, expected_env: dict[str, str], expected_unset: set[str], note: str
) -> None:
    record = TerminalState(cwd="src", env={"FOO": "1"}, hidden=["API_TOKEN"])
    state, notes = revive(record, live, BASE)
    assert state.cwd == "src"
    assert dict(state.env) == expected_env
    # "left unset" of a variable the base does not have needs no entry
    assert set(state.unset) == expected_unset & set(BASE)
    assert notes == [note]


def test_revive_a_hidden_base_variable_the_session_still_has() -> None:
    record = TerminalState(hidden=["GITHUB_TOKEN"])
    state, notes = revive(record, ShellState(), BASE)
    assert state == ShellState()
    assert notes == [f"{NOT_RECORDED}: GITHUB_TOKEN; kept the session's current value"]
    gone, notes = revive(record, None, BASE)
    assert gone.unset == frozenset({"GITHUB_TOKEN"})
    assert notes == [f"{NOT_RECORDED}: GITHUB_TOKEN; {LEFT_UNSET}"]


def test_revive_nothing_recorded_is_the_default() -> None:
    assert revive(None, ShellState("src", {"A": "1"}), BASE) == (ShellState(), [])


# --------------------------------------------------------------------------- display


@pytest.mark.parametrize(
    ("state", "text"),
    [
        (None, None),
        (TerminalState(), None),
        (
            TerminalState(cwd="src", env={"FOO": "1"}, hidden=["API_TOKEN"]),
            "Terminal: cwd `src`, API_TOKEN=(not recorded), FOO=1",
        ),
        (TerminalState(unset=["LANG"]), "Terminal: unset LANG"),
        (TerminalState(env={"LONG": "x" * 100}), "Terminal: LONG=" + "x" * 39 + "…"),
        (
            TerminalState(env={f"V{i}": "1" for i in range(10)}),
            "Terminal: " + ", ".join(f"V{i}=1" for i in range(8)) + ", +2 more",
        ),
    ],
)
def test_describe(state: TerminalState | None, text: str | None) -> None:
    assert describe(state) == text


def test_parse_env0() -> None:
    data = b"A=1\0MULTI=line1\nline2\0EQ=a=b\0\0"
    assert parse_env0(data) == {"A": "1", "MULTI": "line1\nline2", "EQ": "a=b"}


def test_wrap_quotes_the_capture_paths(tmp_path: Path) -> None:
    odd = tmp_path / "it's here"
    script = terminal.wrap("echo hi", odd)
    assert "'\"'\"'" in script  # the quote survived shlex quoting
    assert script.endswith("echo hi\n")


# --------------------------------------------------------------------------- through a real shell

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="cmd.exe/PowerShell keep no state")


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = make_workspace(tmp_path)
    (ws / "src" / "sub").mkdir()
    return ToolContext(workspace=ws, engine_config=EngineConfig(), terminal=TerminalSession())


async def run(ctx: ToolContext, command: str, **more: Any) -> ToolResult:
    return await execute("run_command", {"command": command, **more}, ctx)


@posix_only
async def test_cd_and_export_persist_between_calls(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    first = await run(ctx, "cd src && export FOO=1 API_TOKEN=s3cr3t && unset LANG")
    assert first.output == "[exit code 0]"
    assert ctx.terminal.state.cwd == "src"
    assert ctx.terminal.state.env["FOO"] == "1"
    second = await run(ctx, 'pwd; echo "$FOO/$API_TOKEN/${LANG-none}"')
    lines = second.output.splitlines()
    assert lines[0] == str(Path(_real(ctx.workspace)) / "src")
    assert lines[1] == "1/s3cr3t/none"
    record = ctx.terminal.state.record()
    assert record.cwd == "src" and record.env == {} and record.hidden == ["API_TOKEN", "FOO"]


@posix_only
async def test_exit_code_and_set_e_still_record_the_state(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    exited = await run(ctx, "cd src; export A=1; exit 3")
    assert exited.output == "[exit code 3]" and exited.is_error
    assert ctx.terminal.state == ShellState("src", {"A": "1"})
    failed = await run(ctx, "set -e; cd sub; export B=2; false; echo never")
    assert failed.output == "[exit code 1]"
    assert ctx.terminal.state == ShellState("src/sub", {"A": "1", "B": "2"})


@posix_only
async def test_a_timed_out_command_keeps_the_previous_state(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    await run(ctx, "cd src && export KEEP=1")
    timed_out = await run(ctx, "cd sub; export LOST=1; sleep 30", timeout_s=0.5)
    assert timed_out.is_error and "timed out" in timed_out.output
    assert ctx.terminal.state == ShellState("src", {"KEEP": "1"})


@posix_only
async def test_leaving_the_workspace_resets_to_the_root_and_says_so(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    left = await run(ctx, "cd /")
    assert "[terminal: ended outside the workspace (/); the next command starts at the root]" in left.output
    assert ctx.terminal.state.cwd == ""
    here = await run(ctx, "pwd")
    assert here.output.splitlines()[0] == _real(ctx.workspace)


@posix_only
async def test_a_vanished_directory_starts_at_the_root(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    await run(ctx, "mkdir gone && cd gone")
    assert ctx.terminal.state.cwd == "gone"
    (ctx.workspace / "gone").rmdir()
    result = await run(ctx, "pwd")
    assert result.output.splitlines()[0] == _real(ctx.workspace)
    assert "[terminal: `gone` is gone; this command started at the workspace root]" in result.output


@posix_only
async def test_a_login_profile_does_not_accumulate(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile that prepends to PATH on every start must not make PATH grow call after call."""
    assert ctx.terminal is not None
    if run_command_module.SHELL.kind != "bash":
        pytest.skip("login profiles are bash's")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text('export PATH="/opt/extra:$PATH"\n')
    base = {**run_command_module.command_env(), "HOME": str(home)}
    monkeypatch.setattr(run_command_module, "command_env", lambda: base)
    for _ in range(3):
        result = await run(ctx, "echo $PATH")
    assert result.output.splitlines()[0].count("/opt/extra") == 1
    assert ctx.terminal.state == ShellState()


async def test_without_a_session_terminal_every_command_starts_fresh(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=make_workspace(tmp_path), engine_config=EngineConfig())
    await run(ctx, "cd src; export FOO=1")
    result = await run(ctx, 'pwd; echo "[$FOO]"')
    assert result.output.splitlines()[:2] == [_real(ctx.workspace), "[]"]


@posix_only
async def test_a_command_that_replaces_the_exit_trap_keeps_the_previous_state(ctx: ToolContext) -> None:
    assert ctx.terminal is not None
    await run(ctx, "export KEEP=1")
    result = await run(ctx, "trap 'echo bye' EXIT; cd src; export OTHER=2")
    assert result.output.startswith("bye\n")
    assert "[terminal: the shell's final cwd and environment were not written; kept the old ones]" in (
        result.output
    )
    assert ctx.terminal.state == ShellState("", {"KEEP": "1"})


class _SlowRecord:
    """A background registry whose record of a running command is still being written (a slow
    disk) when the turn is cancelled: the command has already started."""

    def __init__(self) -> None:
        self.untracked = 0

    def identity(self) -> tuple[str, dict[str, str]]:
        raise AssertionError("no background command here")

    async def adopt(self, *_: Any) -> tuple[str, int]:
        raise AssertionError("no background command here")

    async def track(self, identity: Any, command: str) -> None:
        await asyncio.Event().wait()  # never done: the cancel arrives here

    async def untrack(self, identity: Any) -> None:
        self.untracked += 1


@posix_only
@pytest.mark.parametrize("persistent", [True, False], ids=["persistent shell", "one-off shell"])
async def test_a_cancel_while_the_call_is_being_recorded_still_stops_the_command(
    tmp_path: Path, persistent: bool
) -> None:
    """A cancel that lands while ``run_command`` records the running command (an await between
    the spawn and the wait) stops the command and everything it started, as any other cancel."""
    ws = make_workspace(tmp_path)
    record = _SlowRecord()
    ctx = ToolContext(
        workspace=ws,
        engine_config=EngineConfig(),
        terminal=TerminalSession() if persistent else None,
        background=record,
    )
    call = asyncio.create_task(run(ctx, "sleep 30 & echo $! > bg.pid; sleep 30"))
    for _ in range(200):
        if (ws / "bg.pid").exists() and (ws / "bg.pid").read_text().strip():
            break
        await asyncio.sleep(0.05)
    pid = int((ws / "bg.pid").read_text())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await dies(pid, within=15), "the command's background child survived the cancel"
    assert record.untracked == 1, "the call's record is removed with it"


class _SlowAdoption(_SlowRecord):
    """A background registry that takes a while to take a command over (a slow disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.adopting = asyncio.Event()
        self.adopted: list[int] = []

    def identity(self) -> tuple[str, dict[str, str]]:
        return "token", {"RETRACE_TEST_TASK": "token"}

    async def adopt(self, command: str, proc: Any, token: str, make_buffer: Any) -> tuple[str, int]:
        self.adopting.set()
        await asyncio.sleep(0.5)
        self.adopted.append(proc.pid)
        return "bg-1", proc.pid


@posix_only
async def test_a_cancel_while_a_background_command_is_adopted_leaves_it_adopted(tmp_path: Path) -> None:
    """A background command that was spawned is taken over by the registry (which can stop it)
    even when the turn is cancelled during the take-over; the cancel still ends the call."""
    registry = _SlowAdoption()
    ctx = ToolContext(workspace=make_workspace(tmp_path), engine_config=EngineConfig(), background=registry)
    call = asyncio.create_task(run(ctx, "sleep 30", background=True))
    await asyncio.wait_for(registry.adopting.wait(), 30)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert len(registry.adopted) == 1, "the spawned command was left with nobody to stop it"
    os.killpg(registry.adopted[0], 9)


class _FailingAdoption(_SlowAdoption):
    """A background registry whose take-over fails (a full disk while it records the command),
    after ``delay`` seconds; it notes the pid of each command it was handed."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay
        self.handed: list[int] = []

    async def adopt(self, command: str, proc: Any, token: str, make_buffer: Any) -> tuple[str, int]:
        self.handed.append(proc.pid)
        self.adopting.set()
        await asyncio.sleep(self.delay)
        raise OSError(28, "No space left on device")


@posix_only
async def test_a_background_command_whose_take_over_fails_is_stopped(tmp_path: Path) -> None:
    """A spawned background command the registry could not take over has nobody to stop it
    later: the call stops it and says why it did not start."""
    registry = _FailingAdoption()
    ctx = ToolContext(workspace=make_workspace(tmp_path), engine_config=EngineConfig(), background=registry)
    result = await run(ctx, "sleep 30", background=True)
    assert result.is_error
    assert "No space left on device" in result.output
    assert await dies(registry.handed[0], within=15), "the command runs on with nobody to stop it"


@posix_only
async def test_a_cancel_during_a_failing_take_over_stops_the_command_and_leaves_no_unseen_error(
    tmp_path: Path,
) -> None:
    """A cancel that lands while the take-over runs, then the take-over fails: the cancel goes on,
    the command is stopped, and the failure is not left behind as an unretrieved task error."""
    registry = _FailingAdoption(delay=0.3)
    ctx = ToolContext(workspace=make_workspace(tmp_path), engine_config=EngineConfig(), background=registry)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        call = asyncio.create_task(run(ctx, "sleep 30", background=True))
        await asyncio.wait_for(registry.adopting.wait(), 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        del call
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert await dies(registry.handed[0], within=15), "the command runs on with nobody to stop it"
    assert [c.get("message") for c in reported] == []
