"""``run_command``: a shell command in the workspace, in its own process group.

The shell is the platform's (:mod:`retrace.agent.tools.shell`: ``bash -lc``, ``/bin/sh -c``
without bash, cmd.exe or PowerShell on Windows) and the tool description names it. Nothing the
command starts outlives the call: when its shell exits, times out or the turn is cancelled, every
process of the call — its group, its session, and (Linux) every process carrying the call's
random ``RETRACE_CALL_TOKEN``, so daemons that left the group (``setsid``, ``nohup``, double
forks, ``disown``) too — gets SIGTERM, and SIGKILL after
:data:`retrace.agent.processes.STOP_GRACE_S` (a dev server or a container gets to clean up);
the result names what had to be stopped and points at ``background: true``. The call does not
wait for a pipe a daemon holds open (only for its shell), and while it runs it is recorded with
the background tasks, so a server that dies mid-call has its processes ended by the next start.
Output (stdout and stderr interleaved) is capped, keeping head and tail; the
exit code is always reported; it is journaled, shown and sent to the model with known secret
formats redacted (:func:`retrace.agent.tool_call.recorded_output`). The files it changed are
unknown (``changed_paths=None``): the engine detects them. The command does not inherit the
model API credentials (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, their hand-off
variables): ``env`` output is a tool result, and tool results are journaled and sent to the
model. The server itself holds them where a command cannot read them (:mod:`retrace.credentials`).

With a session terminal (``ctx.terminal``; bash or sh) the command starts in the session's cwd
with its environment changes, and what it leaves (``cd``, ``export``, ``unset``) is read back for
the next call (:mod:`retrace.agent.terminal`); a killed or timed-out command keeps the previous
state.
``background: true`` starts the command and returns at once with a handle: the process (in its
own group, as always) is handed to the agent's background task registry
(:mod:`retrace.agent.background`), which reports its output and exit status at the next turn; it
starts in the session's cwd and environment, and what it changes of them is not read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from retrace import credentials
from retrace.agent import processes, terminal
from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec
from retrace.agent.tools.paths import locate, workspace_root
from retrace.agent.tools.shell import choose_shell, describe, kill_tree, spawn_options

_T = TypeVar("_T")

MAX_TIMEOUT_S = 3600.0
DRAIN_S = 2.0
"""How long the output of a call is read on once all its processes ended (a pipe still buffered)."""
POLL_EXIT_S = 0.05
"""How often a call whose output is still open looks whether its shell exited."""
REAP_S = 5.0
"""How long the shell's exit status is awaited once every process of the call was stopped."""
SHELL = choose_shell()
"""Chosen once: the description the model saw and the shell that runs its commands agree."""


BACKGROUND_HINT = (
    " With background=true it starts the command (a dev server, a watcher, a long build) and "
    "returns at once with a handle; its output and exit status are reported at the next turn."
)


def command_env() -> dict[str, str]:
    return credentials.child_env()


class RunCommandInput(ToolInput):
    command: str
    """The command line to run in the workspace root, in the shell the tool description names."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Seconds before the command is killed. Default: the configured command timeout. Not for
    background commands."""
    cwd: str | None = None
    """Where it starts: a directory of the workspace; in a multi-root workspace ``<folder>`` or
    ``<folder>/sub`` (default: the session's directory, the first folder's root at first). With a
    cwd, what the command changes of the session's directory and environment is not kept."""
    background: bool = False
    """Run it in the background (dev servers, watchers, long builds): the call returns at once
    with a handle (bg-1…); the command's new output and its exit status are reported at the start
    of the user's next turn. It is stopped when the user stops it or the session's server exits."""


class _CappedBuffer:
    """Keeps the first and last ``cap/2`` bytes of a stream of any length."""

    def __init__(self, cap: int) -> None:
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        tail = bytes(self.tail[-self.half :]) if self.tail else b""
        kept = len(self.head) + len(tail)
        head = bytes(self.head).decode("utf-8", errors="replace")
        if kept >= self.total:
            return head + bytes(self.tail).decode("utf-8", errors="replace")
        omitted = self.total - kept
        return (
            f"{head}\n[... {omitted} bytes omitted (output capped at {2 * self.half} bytes) ...]\n"
            + tail.decode("utf-8", errors="replace")
        )


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    kill_tree(proc.pid)
    if proc.returncode is None:  # the shell itself, where the tree kill could not reach it
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


async def _spawn(command: str, cwd: Path, env: Mapping[str, str]) -> asyncio.subprocess.Process:
    options = {
        "cwd": cwd,
        "env": dict(env),
        "stdin": asyncio.subprocess.DEVNULL,
        "stdout": asyncio.subprocess.PIPE,
        "stderr": asyncio.subprocess.STDOUT,
        **spawn_options(),  # its own process group: killable as a whole
    }
    argv = SHELL.argv(command)
    if argv is None:  # cmd.exe: %COMSPEC% /c "<command>", a command line (see shell.py)
        return await asyncio.create_subprocess_shell(command, **options)
    return await asyncio.create_subprocess_exec(*argv, **options)


def start_dir(args: RunCommandInput, ctx: ToolContext) -> Path | None:
    """The directory ``cwd`` names (``None``: none given), checked by the folder rule: outside
    every folder, a file, a missing directory are refused before anything runs."""
    if args.cwd is None:
        return None
    if not args.cwd.strip():
        raise ToolError("cwd is empty")
    place = locate(ctx, args.cwd)
    if not place.real.exists():
        raise ToolError(f"cwd {place.shown(place.rel)} does not exist")
    if not place.real.is_dir():
        raise ToolError(f"cwd {place.shown(place.rel)} is not a directory")
    return place.real


async def run(args: RunCommandInput, ctx: ToolContext) -> ToolResult:
    if not args.command.strip():
        raise ToolError("command is empty")
    cwd = start_dir(args, ctx)
    if args.background:
        return await _run_in_background(args, ctx, cwd)
    timeout = min(args.timeout_s or ctx.command_timeout_s, MAX_TIMEOUT_S)
    shell = _shell_run(ctx)
    proc, identity = await _start_call(args.command, ctx, shell, cwd)
    buffer = _CappedBuffer(ctx.output_cap_bytes)
    reader = asyncio.create_task(_read_all(proc, buffer))
    timed_out = cancelled = False
    # From the spawn on, every await is inside this try: a cancel that lands anywhere (recording
    # the call included) still stops the command and everything it started below.
    try:
        if ctx.background is not None:
            with contextlib.suppress(Exception):  # a record is a safety net, never a reason to fail
                await ctx.background.track(identity, args.command)
        await asyncio.wait_for(_shell_exit(proc, reader), timeout)
    except TimeoutError:
        timed_out = True
    except asyncio.CancelledError:
        cancelled = True
    # The shell ended (or timed out, or the turn was cancelled): what it started and left running
    # ends with the call, daemons that left its group included (this also closes the output pipe
    # they held). The stop is finished even when the turn is cancelled meanwhile.
    ending = asyncio.create_task(_end_call(identity, proc, reader, ctx))
    cancelled = await _finish_despite_cancel(ending) or cancelled
    completed = not (timed_out or cancelled) and proc.returncode is not None and proc.returncode >= 0
    notes = shell.finish(completed=completed and cwd is None) if shell is not None else []
    if cancelled:
        raise asyncio.CancelledError
    stopped = ending.result()
    said = _stopped_note(stopped, timed_out)
    extra = [terminal.note_text(notes), "" if timed_out else said]
    output = "\n".join(p for p in (buffer.text().rstrip("\n"), *extra) if p)
    if timed_out:
        note = f"[timed out after {timeout:g}s; {said}]"
        return ToolResult(f"{output}\n{note}".lstrip("\n"), is_error=True, changed_paths=None)
    code = proc.returncode
    status = f"[exit code {code}]"
    return ToolResult(f"{output}\n{status}".lstrip("\n"), is_error=code != 0, changed_paths=None)


async def _start_call(
    command: str, ctx: ToolContext, shell: terminal.ShellRun | None, cwd: Path | None
) -> tuple[asyncio.subprocess.Process, processes.Identity]:
    """Spawn the command with a fresh call token in its environment; the process and the
    identity of everything it will start (registered as in flight). With ``cwd``: there, in the
    session's environment, its changes to the session not read back."""
    token = secrets.token_hex(16)
    mark = {processes.CALL_TOKEN_VARIABLE: token}
    try:
        if shell is None:
            proc = await _spawn(command, cwd or workspace_root(ctx), {**command_env(), **mark})
        elif cwd is not None:
            proc = await _spawn(command, cwd, {**shell.env, **mark})
        else:
            proc = await _spawn(shell.script(command), shell.cwd, {**shell.env, **mark})
    except BaseException:
        if shell is not None:
            shell.close()
        raise
    since = processes.start_time(proc.pid)
    identity = processes.Identity(processes.CALL_TOKEN_VARIABLE, token, proc.pid, since)
    processes.register(identity)
    return proc, identity


async def _read_all(proc: asyncio.subprocess.Process, buffer: _CappedBuffer) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(65536):
        buffer.add(chunk)


async def _shell_exit(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Until the shell exited. Not ``proc.wait()``: that also waits for the output pipe to close,
    which a daemon holding it never does."""
    while proc.returncode is None:
        if reader.done():  # the usual end: output closed, the exit follows at once
            await proc.wait()
            return
        await asyncio.wait({reader}, timeout=POLL_EXIT_S)


async def _end_call(
    identity: processes.Identity,
    proc: asyncio.subprocess.Process,
    reader: asyncio.Task[None],
    ctx: ToolContext,
) -> list[processes.Stopped]:
    """Stop every process of the call (SIGTERM, SIGKILL after the grace), reap the shell and
    drain the output; the processes that had to be stopped (the shell itself not counted)."""
    try:
        stopped = await asyncio.to_thread(processes.stop, [identity], processes.STOP_GRACE_S)
        _kill_group(proc)  # where /proc is missing: the group, as before
        for _ in range(int(REAP_S / POLL_EXIT_S)):  # the shell is gone: its exit status follows
            if proc.returncode is not None:
                break
            await asyncio.sleep(POLL_EXIT_S)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(reader), DRAIN_S)
    finally:
        if not reader.done():
            reader.cancel()
        processes.unregister(identity)
        if ctx.background is not None:
            with contextlib.suppress(Exception):
                await ctx.background.untrack(identity)
    return [s for s in stopped if s.pid != proc.pid]


async def _finish_despite_cancel(task: asyncio.Future[_T]) -> bool:
    """Wait until ``task`` ended, even when the caller is cancelled meanwhile (the cancel is not
    passed on to the task: a stop or a take-over must not be left half done). True when a cancel
    arrived: the caller finishes and then raises ``CancelledError``; the task's own error is then
    marked as seen (the cancel wins; the caller may still read it)."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            cancelled = True
    if cancelled and not task.cancelled():
        task.exception()
    return cancelled


async def _stop_unadopted(proc: asyncio.subprocess.Process, identity: processes.Identity) -> bool:
    """Stop a background command nobody took over (SIGTERM, SIGKILL after the grace, its group
    last); True when a cancel arrived meanwhile (the stop still finished)."""
    stop = asyncio.ensure_future(asyncio.to_thread(processes.stop, [identity], processes.STOP_GRACE_S))
    cancelled = await _finish_despite_cancel(stop)
    kill_tree(proc.pid)
    return cancelled


def _stopped_note(stopped: list[processes.Stopped], timed_out: bool) -> str:
    """What the result says of the processes that had to be stopped (none: nothing)."""
    if timed_out:
        what = f"; stopped: {processes.summary(stopped)}" if stopped else ""
        return f"the command and everything it started were stopped (SIGTERM, then SIGKILL){what}"
    if not stopped:
        return ""
    return (
        f"[stopped {len(stopped)} process(es) the command left running (SIGTERM, then SIGKILL after "
        f"{processes.STOP_GRACE_S:g}s): {processes.summary(stopped)}; to keep a command running, "
        "start it with background=true]"
    )


def _shell_run(ctx: ToolContext) -> terminal.ShellRun | None:
    if ctx.terminal is not None and SHELL.kind in terminal.PERSISTENT_SHELLS:
        return terminal.ShellRun(ctx.terminal, workspace_root(ctx), command_env())
    return None


async def _run_in_background(args: RunCommandInput, ctx: ToolContext, cwd: Path | None) -> ToolResult:
    """Start the command and hand it to the background task registry. Its checkpoint captures
    nothing (``changed_paths=[]``): what the command changes is recorded in background checkpoints
    of its own at the next boundaries (:mod:`retrace.agent.background`)."""
    if ctx.background is None:
        raise ToolError("background commands are not available here; run it in the foreground")
    if args.timeout_s is not None:
        raise ToolError("timeout_s does not apply to a background command (it runs until stopped)")
    token, env = ctx.background.identity()
    # It starts in the session's cwd and environment; what it changes of them is not read back
    # (it outlives the call): the session's shell state stays as it was.
    shell = _shell_run(ctx)
    try:
        if shell is None:
            proc = await _spawn(args.command, cwd or workspace_root(ctx), {**command_env(), **env})
        else:
            proc = await _spawn(args.command, cwd or shell.cwd, {**shell.env, **env})
    finally:
        if shell is not None:
            shell.finish(completed=False)
    # The adoption finishes even when the turn is cancelled meanwhile: a command spawned but not
    # yet registered would run on with nobody to stop it (then the cancel goes on). A failed
    # adoption stops the command for the same reason.
    adoption = asyncio.ensure_future(
        ctx.background.adopt(args.command, proc, token, lambda: _CappedBuffer(ctx.output_cap_bytes))
    )
    cancelled = await _finish_despite_cancel(adoption)
    failure = None if adoption.cancelled() else adoption.exception()
    if adoption.cancelled() or failure is not None:
        since = processes.start_time(proc.pid)
        identity = processes.Identity(next(iter(env)), token, proc.pid, since)
        cancelled = await _stop_unadopted(proc, identity) or cancelled
    if cancelled:
        raise asyncio.CancelledError
    if failure is not None:
        raise ToolError(f"the background task registry could not take the command over (stopped): {failure}")
    handle, pid = adoption.result()
    return ToolResult(
        f"started in the background as {handle} (pid {pid}); its output and exit status arrive at "
        "the next turn boundary (the start of the user's next turn)",
        changed_paths=[],
    )


SPEC = ToolSpec(
    name="run_command",
    description=describe(SHELL) + BACKGROUND_HINT,
    category="command",
    input_model=RunCommandInput,
    run=run,
)
