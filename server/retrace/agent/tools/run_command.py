"""``run_command``: a shell command in the workspace, in its own process group.

The shell is the platform's (:mod:`retrace.agent.tools.shell`: ``bash -lc``, ``/bin/sh -c``
without bash, cmd.exe or PowerShell on Windows) and the tool description names it. The whole
group (process tree on Windows) is killed when the command times out or the turn is cancelled,
so no child outlives the call. Output (stdout and stderr interleaved) is capped, keeping head and tail; the
exit code is always reported. The files it changed are unknown (``changed_paths=None``): the
engine detects them. The command does not inherit the model API credentials
(``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, their hand-off variables): ``env`` output is a
tool result, and tool results are journaled and sent to the model. The server itself holds them
where a command cannot read them (:mod:`retrace.credentials`).

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
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from retrace import credentials
from retrace.agent import terminal
from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec
from retrace.agent.tools.paths import workspace_root
from retrace.agent.tools.shell import choose_shell, describe, kill_tree, spawn_options

MAX_TIMEOUT_S = 3600.0
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


async def run(args: RunCommandInput, ctx: ToolContext) -> ToolResult:
    if not args.command.strip():
        raise ToolError("command is empty")
    if args.background:
        return await _run_in_background(args, ctx)
    timeout = min(args.timeout_s or ctx.command_timeout_s, MAX_TIMEOUT_S)
    shell = _shell_run(ctx)
    try:
        if shell is None:
            proc = await _spawn(args.command, workspace_root(ctx), command_env())
        else:
            proc = await _spawn(shell.script(args.command), shell.cwd, shell.env)
    except BaseException:
        if shell is not None:
            shell.close()
        raise
    buffer = _CappedBuffer(ctx.output_cap_bytes)

    async def pump() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            buffer.add(chunk)
        await proc.wait()

    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        timed_out = True
        _kill_group(proc)
        await proc.wait()
    except asyncio.CancelledError:
        _kill_group(proc)
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
        raise
    finally:
        # Background children that kept running after the shell exited belong to us too.
        _kill_group(proc)
        ended = not timed_out and proc.returncode is not None and proc.returncode >= 0  # not killed
        notes = shell.finish(completed=ended) if shell is not None else []
    output = "\n".join(p for p in (buffer.text().rstrip("\n"), terminal.note_text(notes)) if p)
    if timed_out:
        note = f"[timed out after {timeout:g}s; the command's process group was killed]"
        return ToolResult(f"{output}\n{note}".lstrip("\n"), is_error=True, changed_paths=None)
    code = proc.returncode
    status = f"[exit code {code}]"
    return ToolResult(f"{output}\n{status}".lstrip("\n"), is_error=code != 0, changed_paths=None)


def _shell_run(ctx: ToolContext) -> terminal.ShellRun | None:
    if ctx.terminal is not None and SHELL.kind in terminal.PERSISTENT_SHELLS:
        return terminal.ShellRun(ctx.terminal, workspace_root(ctx), command_env())
    return None


async def _run_in_background(args: RunCommandInput, ctx: ToolContext) -> ToolResult:
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
            proc = await _spawn(args.command, workspace_root(ctx), {**command_env(), **env})
        else:
            proc = await _spawn(args.command, shell.cwd, {**shell.env, **env})
    finally:
        if shell is not None:
            shell.finish(completed=False)
    handle, pid = await ctx.background.adopt(
        args.command, proc, token, lambda: _CappedBuffer(ctx.output_cap_bytes)
    )
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
