"""Background commands a previous server left running, and ending them without ever touching an
unrelated process.

A background command runs in a session (process group) of its own, so it would outlive a server
that crashed or was killed; so would a foreground ``run_command`` running at that moment (and
whatever it started), which is recorded the same way for as long as it runs. While it runs, the
server keeps a record of it in the store (``<store>/runtime/background.json``:
:class:`LeftoverRecord` per task or call); the next server to open the store reads it and ends
the groups that are still there.

Identity: every background command is started with ``RETRACE_BACKGROUND_TASK=<random token>`` in
its environment, which its children inherit. A recorded group is killed only when one of its
members still carries that token (read from ``/proc/<pid>/environ``): a process id reused since
by something else cannot carry a random token it never saw, and a process group id cannot be
reused while any member of the old group lives; a daemon that left the group is found by its
token alone (:mod:`retrace.agent.processes`: SIGTERM, SIGKILL after the grace). Where ``/proc``
is missing (macOS, Windows) a leftover is reported, not killed: there is no cheap way there to
read another process's environment, and killing on a bare process id could hit a stranger.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

from retrace.agent.processes import Identity
from retrace.agent.processes import stop as stop_processes

log = logging.getLogger(__name__)

TOKEN_VARIABLE = "RETRACE_BACKGROUND_TASK"
"""Environment variable every background command (and what it starts) carries: its identity."""
PROC = Path("/proc")


@dataclass(frozen=True)
class LeftoverRecord:
    """What is kept of a running background command in the store."""

    handle: str
    session_id: str
    command: str
    pid: int
    """Also its process group id (the command leads a group of its own)."""
    token: str
    started_at: str
    variable: str = TOKEN_VARIABLE
    """The environment variable that carries ``token``: a background command's, or a foreground
    call's (:data:`retrace.agent.processes.CALL_TOKEN_VARIABLE`, recorded while the call runs)."""

    @property
    def is_call(self) -> bool:
        """A foreground ``run_command`` that was running (not a background command)."""
        return self.variable != TOKEN_VARIABLE


def read_records(path: Path) -> list[LeftoverRecord]:
    """The records in ``path`` (none when it is missing or unreadable: a damaged record only
    means a leftover is not found, never that something else is killed)."""
    try:
        raw = json.loads(path.read_text("utf-8"))
        return [LeftoverRecord(**item) for item in raw.get("tasks", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("background task record %s is unreadable (%s): ignored", path, exc)
        return []


def write_records(path: Path, records: list[LeftoverRecord]) -> None:
    """Replace the records atomically; no records: no file."""
    if not records:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": 1, "tasks": [asdict(r) for r in records]}), "utf-8")
    tmp.replace(path)


def stat_group(stat: str) -> int | None:
    """The process group id in a ``/proc/<pid>/stat`` line (``None`` if malformed). The command
    name (in parentheses) may itself hold spaces and parentheses: fields follow the last ``)``."""
    _, sep, rest = stat.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 3:
        return None
    try:
        return int(fields[2])
    except ValueError:
        return None


def carries_token(environ: bytes, token: str) -> bool:
    """Whether a ``/proc/<pid>/environ`` block sets :data:`TOKEN_VARIABLE` to ``token``."""
    return f"{TOKEN_VARIABLE}={token}".encode() in environ.split(b"\0")


def group_members(pgid: int, proc: Path = PROC) -> list[int]:
    """Process ids whose process group is ``pgid`` (Linux ``/proc``)."""
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text("utf-8", errors="replace")
        except OSError:
            continue
        if stat_group(stat) == pgid:
            members.append(int(entry.name))
    return members


def group_is_ours(record: LeftoverRecord, proc: Path = PROC) -> bool:
    """Whether the recorded group still exists and one of its members carries the record's token."""
    for pid in group_members(record.pid, proc):
        try:
            environ = (proc / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if f"{record.variable}={record.token}".encode() in environ.split(b"\0"):
            return True
    return False


def end_leftovers(path: Path, proc: Path = PROC) -> list[LeftoverRecord]:
    """Kill the recorded groups that are still ours, forget the records; returns the records
    (each of those commands is gone now, or was reported as impossible to check)."""
    records = read_records(path)
    if not records:
        return []
    for record in records:
        if not proc.is_dir():
            log.warning(
                "background command %s (%s, pid %d) of a previous server may still run: "
                "this platform cannot confirm it is ours, so it was left alone",
                record.handle,
                record.command[:80],
                record.pid,
            )
            continue
        # Its group only when a member still carries the token (the group id is then still the
        # command's: it cannot be reused while a member lives); its daemons by the token alone.
        leader = record.pid if group_is_ours(record, proc) else None
        ended = stop_processes([Identity(record.variable, record.token, leader)], proc=proc)
        if ended:
            log.info("ended background command %s of a previous server (pid %d)", record.handle, record.pid)
        if leader is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.pid, signal.SIGKILL)
    write_records(path, [])
    return records
