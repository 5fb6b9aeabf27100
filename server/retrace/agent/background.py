"""Background commands: ``run_command`` with ``background: true`` (dev servers, watchers, builds).

:class:`BackgroundTasks` is the one owner of the background commands of an agent service (one
workspace, every session): it adopts the process ``run_command`` spawned (in a process group of
its own), pumps its output into a capped buffer, and notices when it ends. Contracts:

* **Delivery at turn boundaries.** :meth:`BackgroundTasks.news` is the text the next turn of a
  session prepends to the user's prompt (journaled with it): per task of that session, the output
  since it was last reported (capped: head and tail) and its exit status once it ended. It is
  reported once; news not yet reported stays until that session's next turn, and news whose
  prompt was withdrawn unanswered (a failed model call) is reported again (:meth:`redeliver`).
* **Checkpoints of their own.** While a task runs, or after it ended until its last changes were
  captured, unannounced changes found at a boundary (turn start, before each tool call, turn
  end) belong to the background commands: :meth:`window` names them, the caller commits a
  ``background`` checkpoint labelled with their commands, and :meth:`settle` marks the ended ones
  done. A foreground shell command that runs while a background command writes cannot tell the
  two apart: its checkpoint holds both, and its tool result says so (:meth:`overlap_note`).
* **Never outliving the server.** Every task's group is killed on :meth:`kill_all` (server
  shutdown); while tasks run, a record of them is kept in the store (:mod:`.leftovers`), so a
  server that died without shutting down has them killed by the next one to open the store.
* **Stopping.** :meth:`stop` ends one task (the user, or a restore that asked to).
* **Daemons.** A task's processes are its group, its session and every process carrying its token
  (:mod:`retrace.agent.processes`): a daemon it started (``setsid``, a double fork) belongs to the
  task. It runs while the task's shell runs, is not touched when a turn ends (the task was asked
  to keep running), and ends with the task: when its shell exits, on a stop, a restore that
  stops it, ``retrace run``'s end, the server's shutdown, or the next start after a crash. Every
  end is SIGTERM first and SIGKILL after :data:`retrace.agent.processes.STOP_GRACE_S`.

Handles (``bg-1``…) are unique within a server run and continue after the leftovers of a previous
run, so a model never sees one handle name two commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from retrace.agent.leftovers import TOKEN_VARIABLE, LeftoverRecord, end_leftovers, write_records
from retrace.agent.notifications import (
    AgentHost,
    BackgroundTaskChanged,
    BackgroundTaskState,
    BackgroundTaskView,
)
from retrace.agent.processes import Identity, start_time, stop_in_flight
from retrace.agent.processes import stop as stop_processes
from retrace.agent.tools.shell import kill_tree
from retrace.engine.errors import RetraceError

log = logging.getLogger(__name__)

NEWS_HEADER = "[Retrace: news of background commands since they were last reported]"
POLL_EXIT_S = 0.2
"""How often a pump looks whether the shell exited (its output pipe may stay open in a child)."""


class OutputBuffer(Protocol):
    """A capped output buffer (``run_command``'s): bytes in, text with any cut marked out."""

    total: int

    def add(self, chunk: bytes) -> None: ...

    def text(self) -> str: ...


class BackgroundTasksRunning(RetraceError):  # noqa: N818 (contract names)
    """A code restore was asked for while background commands run, without saying what to do
    with them (``backgroundTasks: "stop" | "keep"``)."""

    code = "backgroundTasksRunning"


@dataclass
class BackgroundTask:
    handle: str
    session_id: str
    command: str
    proc: asyncio.subprocess.Process
    token: str
    started_at: str
    make_buffer: Callable[[], OutputBuffer]
    pending: OutputBuffer
    """Output since the task was last reported to the model."""
    exit_code: int | None = None
    ended: bool = False
    stopped_by: str | None = None
    reported_end: bool = False
    settled: bool = False
    """Ended, and its last changes were captured at a boundary."""
    pump: asyncio.Task[None] | None = field(default=None, repr=False)
    since: int | None = None
    """Its shell's start time (:attr:`retrace.agent.processes.Identity.since`)."""
    after: str | None = None
    """The newest checkpoint when it started (a conversation restore to a checkpoint this is
    not a strict ancestor of stops it: :mod:`retrace.agent.rewind`)."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def identity(self) -> Identity:
        """Its processes: its group and session, and every process carrying its token (daemons
        that left the group included)."""
        return Identity(TOKEN_VARIABLE, self.token, self.pid, self.since)

    @property
    def state(self) -> BackgroundTaskState:
        if not self.ended:
            return "running"
        return "stopped" if self.stopped_by else "exited"

    def view(self) -> BackgroundTaskView:
        return BackgroundTaskView(
            handle=self.handle,
            session_id=self.session_id,
            command=self.command,
            pid=self.pid,
            started_at=self.started_at,
            state=self.state,
            exit_code=self.exit_code,
            stopped_by=self.stopped_by,
        )

    def record(self) -> LeftoverRecord:
        return LeftoverRecord(
            self.handle, self.session_id, self.command, self.pid, self.token, self.started_at
        )


@dataclass(frozen=True)
class Started:
    """What ``run_command`` tells the model when it started a background command."""

    handle: str
    pid: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def short(command: str, limit: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class BackgroundTasks:
    """The background commands of one agent service (see the module documentation)."""

    def __init__(self, host: AgentHost, record_file: Path | None = None) -> None:
        self.host = host
        self.record_file = record_file
        """Where running tasks are recorded (``None``: nowhere; a read-only store)."""
        self._tasks: dict[str, BackgroundTask] = {}
        self._records_lock = asyncio.Lock()
        """Record writes run one at a time, each from the state at its turn: two pumps ending
        together must not land their writes in the wrong order (a stale record left behind)."""
        self._next = 1
        self._lost: dict[str, list[str]] = {}
        """Session id → news still to report: tasks a previous server left (killed at start-up),
        news of a prompt that was withdrawn unanswered."""
        self._last_news: dict[str, str] = {}
        self._calls: dict[str, LeftoverRecord] = {}
        """Foreground commands running now (token → record): recorded with the tasks, so a server
        that dies in the middle of one has its processes ended by the next."""

    # ------------------------------------------------------------------ start-up
    def end_leftovers(self) -> list[LeftoverRecord]:
        """Kill what a previous server left running (blocking: call it from a worker thread);
        their sessions learn it at their next turn."""
        if self.record_file is None:
            return []
        records = end_leftovers(self.record_file)
        for r in records:
            if r.is_call:
                self._lost.setdefault(r.session_id, []).append(
                    f"the command `{short(r.command)}` (pid {r.pid}) was still running when the Retrace "
                    "server exited; it and everything it started were stopped at the next start."
                )
                continue
            self._lost.setdefault(r.session_id, []).append(
                f"{r.handle} ({short(r.command)}, pid {r.pid}) was stopped: the Retrace server "
                "exited while it ran; its later output and exit status are unknown."
            )
            number = r.handle.removeprefix("bg-")
            if number.isdigit():
                self._next = max(self._next, int(number) + 1)
        return records

    # ------------------------------------------------------------------ starting
    @staticmethod
    def new_token() -> tuple[str, dict[str, str]]:
        """A task identity and the environment entry that carries it into the command."""
        token = secrets.token_hex(16)
        return token, {TOKEN_VARIABLE: token}

    async def adopt(
        self,
        session_id: str,
        command: str,
        proc: asyncio.subprocess.Process,
        token: str,
        make_buffer: Callable[[], OutputBuffer],
        *,
        after: str | None = None,
    ) -> Started:
        """Take over a spawned background command: pump its output, record it, announce it
        (``after``: the newest checkpoint now)."""
        handle = f"bg-{self._next}"
        self._next += 1
        task = BackgroundTask(handle, session_id, command, proc, token, _now(), make_buffer, make_buffer())
        task.after = after
        task.since = await asyncio.to_thread(start_time, proc.pid)
        self._tasks[handle] = task
        await self._save_records()
        # Announced as running before its pump starts: the pump's "exited" announcement always
        # comes after it (the pipe holds what the command writes meanwhile).
        await self._announce(task)
        task.pump = asyncio.create_task(self._pump(task), name=f"retrace-background-{handle}")
        return Started(handle, proc.pid)

    async def _pump(self, task: BackgroundTask) -> None:
        proc = task.proc

        async def read() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(65536):
                task.pending.add(chunk)

        reader = asyncio.create_task(read())
        try:
            while proc.returncode is None:
                if reader.done():  # the command closed its output but runs on
                    await asyncio.sleep(POLL_EXIT_S)
                else:
                    await asyncio.wait({reader}, timeout=POLL_EXIT_S)
            code = proc.returncode
            # The shell exited: what it left running ends with it (as a foreground command's
            # leftovers do: SIGTERM, SIGKILL after the grace), which also closes the pipe.
            await asyncio.to_thread(stop_processes, [task.identity])
            kill_tree(proc.pid)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(reader), 5.0)
        except asyncio.CancelledError:
            stop_processes([task.identity], 0.0)
            kill_tree(proc.pid)
            raise
        finally:
            if not reader.done():
                reader.cancel()
        task.exit_code = code
        task.ended = True
        await self._save_records()
        with contextlib.suppress(Exception):
            await self._announce(task)

    async def _announce(self, task: BackgroundTask) -> None:
        try:
            await self.host.emit(BackgroundTaskChanged(session_id=task.session_id, task=task.view()))
        except Exception:
            log.exception("announcing background task %s failed", task.handle)

    async def _save_records(self) -> None:
        if self.record_file is None:
            return
        async with self._records_lock:
            records = [t.record() for t in self._tasks.values() if not t.ended] + list(self._calls.values())
            try:
                await asyncio.to_thread(write_records, self.record_file, records)
            except OSError as exc:
                log.warning("could not record background tasks in %s: %s", self.record_file, exc)

    async def track_call(self, session_id: str, identity: Identity, command: str) -> None:
        """A foreground command started: record it while it runs (see :attr:`_calls`)."""
        if self.record_file is None:
            return
        self._calls[identity.token] = LeftoverRecord(
            "call", session_id, command, identity.leader or 0, identity.token, _now(), identity.variable
        )
        await self._save_records()

    async def untrack_call(self, identity: Identity) -> None:
        """A foreground command ended, and everything it started with it."""
        if self._calls.pop(identity.token, None) is not None:
            await self._save_records()

    def launcher(
        self, session_id: str, anchor: Callable[[], Awaitable[str | None]] | None = None
    ) -> SessionLauncher:
        """What ``run_command`` of ``session_id`` hands its background commands to."""
        return SessionLauncher(self, session_id, anchor)

    # ------------------------------------------------------------------ views
    def tasks(self, session_id: str | None = None) -> list[BackgroundTask]:
        return [t for t in self._tasks.values() if session_id is None or t.session_id == session_id]

    def running(self, session_id: str | None = None) -> list[BackgroundTask]:
        return [t for t in self.tasks(session_id) if not t.ended]

    def views(self, session_id: str | None = None, *, running_only: bool = False) -> list[BackgroundTaskView]:
        tasks = self.running(session_id) if running_only else self.tasks(session_id)
        return [t.view() for t in tasks]

    def get(self, handle: str) -> BackgroundTask:
        task = self._tasks.get(handle)
        if task is None:
            raise RetraceError(f"unknown background task {handle[:40]!r}")
        return task

    # ------------------------------------------------------------------ checkpoint boundaries
    def window(self) -> list[BackgroundTask]:
        """The tasks whose file changes may be unrecorded: running, or ended and not settled."""
        return [t for t in self._tasks.values() if not t.settled]

    @staticmethod
    def settle(tasks: list[BackgroundTask]) -> None:
        """``tasks``' changes up to now are recorded: the ones that had ended before that capture
        began are done (pass only those: one that ended during it may have written after the
        capture looked)."""
        for t in tasks:
            if t.ended:
                t.settled = True

    @staticmethod
    def label(tasks: list[BackgroundTask]) -> str:
        """``background: npm run dev`` (several: their commands joined by ``; ``)."""
        return "background: " + "; ".join(short(t.command) for t in tasks)

    @staticmethod
    def meta(tasks: list[BackgroundTask]) -> dict[str, object]:
        return {
            "background": [
                {"handle": t.handle, "command": t.command, "sessionId": t.session_id} for t in tasks
            ]
        }

    def overlap_note(self) -> str | None:
        """What a foreground shell command's result says when background commands ran meanwhile."""
        running = self.running()
        if not running:
            return None
        names = ", ".join(f"{t.handle} ({short(t.command, 40)})" for t in running)
        return (
            f"[note: background command(s) {names} were running: any files they changed during "
            "this command are recorded in this command's checkpoint too]"
        )

    # ------------------------------------------------------------------ delivery
    def news(self, session_id: str) -> str | None:
        """What the next turn of ``session_id`` tells the model (``None``: nothing new); marks
        it reported."""
        parts = list(self._lost.pop(session_id, []))
        for task in self.tasks(session_id):
            if task.reported_end:
                continue
            output = task.pending.text().rstrip("\n") if task.pending.total else ""
            if task.ended:
                task.reported_end = True
            elif not output:
                continue
            task.pending = task.make_buffer()
            parts.append(_news_line(task, output))
        if not parts:
            self._last_news.pop(session_id, None)
            return None
        body = "\n\n".join(parts)
        self._last_news[session_id] = body
        return f"{NEWS_HEADER}\n{body}"

    def redeliver(self, session_id: str) -> None:
        """The prompt that carried the last news was withdrawn (the model never answered it):
        report that news again at the session's next turn."""
        body = self._last_news.pop(session_id, None)
        if body is not None:
            self._lost.setdefault(session_id, []).insert(0, body)

    # ------------------------------------------------------------------ stopping
    async def stop(self, handle: str, by: str = "user") -> BackgroundTask:
        """End the task and everything it started (SIGTERM, SIGKILL after the grace) and wait
        until it is reaped."""
        task = self.get(handle)
        if not task.ended:
            task.stopped_by = by
            await asyncio.to_thread(stop_processes, [task.identity])
            kill_tree(task.pid)
            if task.pump is not None:
                await asyncio.wait({task.pump})
        return task

    async def stop_all(self, session_id: str | None = None, by: str = "user") -> list[BackgroundTask]:
        return [await self.stop(t.handle, by) for t in self.running(session_id)]

    def kill_all(self) -> None:
        """End every running task (and the processes of any foreground command still running)
        now — SIGTERM, SIGKILL after one shared grace — and forget the records: nothing of ours
        outlives the server. Synchronous and touching no event loop (the server's last act, from
        any thread, after its loop may have stopped)."""
        running = self.running()
        for task in running:
            task.stopped_by = task.stopped_by or "shutdown"
        stop_in_flight()
        stop_processes([t.identity for t in running])
        for task in running:
            kill_tree(task.pid)
        if self.record_file is not None:
            try:
                write_records(self.record_file, [])
            except OSError as exc:
                log.warning("could not clear %s: %s", self.record_file, exc)


@dataclass(frozen=True)
class SessionLauncher:
    """:class:`retrace.agent.tools.base.BackgroundLauncher` for one session."""

    tasks: BackgroundTasks
    session_id: str
    anchor: Callable[[], Awaitable[str | None]] | None = None
    """The newest checkpoint, asked when a command starts (``None``: not known)."""

    def identity(self) -> tuple[str, dict[str, str]]:
        return self.tasks.new_token()

    async def adopt(
        self, command: str, proc: asyncio.subprocess.Process, token: str, make_buffer: Callable[[], Any]
    ) -> tuple[str, int]:
        after = await self.anchor() if self.anchor is not None else None
        started = await self.tasks.adopt(self.session_id, command, proc, token, make_buffer, after=after)
        return started.handle, started.pid

    async def track(self, identity: Identity, command: str) -> None:
        await self.tasks.track_call(self.session_id, identity, command)

    async def untrack(self, identity: Identity) -> None:
        await self.tasks.untrack_call(identity)


def _news_line(task: BackgroundTask, output: str) -> str:
    head = f"{task.handle} ({short(task.command)}, pid {task.pid})"
    if not task.ended:
        status = "is still running"
    elif task.stopped_by:
        status = f"was stopped by the {task.stopped_by} (exit status {task.exit_code})"
    else:
        status = f"exited with code {task.exit_code}"
    body = f"New output:\n{output}" if output else "No new output."
    return f"{head} {status}. {body}"
