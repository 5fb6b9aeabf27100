"""Every process a tool command started — including those that left its process group — found
again and ended: SIGTERM first, SIGKILL after a grace.

**Identity.** Each command is spawned with a random token in its environment
(:data:`CALL_TOKEN_VARIABLE` for a foreground ``run_command``, the background task's own variable
for a background one) and as the leader of a session and process group of its own. A process
belongs to the command (:func:`members`) when it is not a zombie, runs as this user, and either
its process group or session is the command's leader (a group or session id cannot be reused
while any member lives) or its ``/proc/<pid>/environ`` carries the token. The environment is
inherited through ``setsid``, ``nohup``, double forks, ``( … & )`` and ``disown``, so a daemon
that left the group is still found; one that also dropped the variable (``env -i``) and left the
session is not (a cgroup would find it: none is created, most hosts do not delegate one).
Linux only (``/proc``); elsewhere only the group is reached (:func:`retrace.agent.tools.shell.kill_tree`).

**Ending** (:func:`stop`): every member gets SIGTERM (and SIGCONT, so a stopped one can act on
it); whatever still lives after :data:`STOP_GRACE_S` gets SIGKILL, repeated until none is left
(bounded). Processes that appear during the grace (a trap's clean-up commands) are left to
finish it: only the SIGKILL round reaches them. Signals go through a pidfd opened and checked
before sending where the platform has one, so a process id reused meanwhile is never signalled.

**In flight.** :func:`register` / :func:`unregister` keep the identities of the commands running
now in this process, so the server's last act (:func:`stop_in_flight`) ends them even when the
turn that ran them was never given the chance.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CALL_TOKEN_VARIABLE = "RETRACE_CALL_TOKEN"
"""The environment variable every foreground ``run_command`` (and all it starts) carries."""
STOP_GRACE_S = 2.0
"""How long a SIGTERMed process has to clean up (a dev server, a container) before SIGKILL."""
POLL_S = 0.05
KILL_ROUNDS = 40
"""SIGKILL rounds at most (a process forking while it is being killed is caught by the next)."""
PROC = Path("/proc")
NAME_CHARS = 60


@dataclass(frozen=True)
class Identity:
    """What marks the processes of one command."""

    variable: str
    token: str
    leader: int | None = None
    """The spawned shell's pid: its process group and session (``None``: the token alone)."""
    since: int | None = None
    """The leader's start time (clock ticks since boot, ``/proc/<pid>/stat``): a process that
    started before it cannot be one of its descendants, so its environment is not read (the scan
    then costs one small read per process). ``None``: every process is looked at."""


@dataclass(frozen=True)
class Stopped:
    """One process that was ended: its pid, its command line (short) and the signal that did it."""

    pid: int
    name: str
    signal: str

    def describe(self) -> str:
        return f"pid {self.pid} `{self.name}` ({self.signal})"


@dataclass(frozen=True)
class _Stat:
    state: str
    pgid: int
    sid: int
    start: int


def parse_stat(line: str) -> _Stat | None:
    """State, process group, session and start time of a ``/proc/<pid>/stat`` line (``None`` if
    malformed). The command name (in parentheses) may hold spaces and parentheses: fields follow
    the last ``)``."""
    _, sep, rest = line.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 4:
        return None
    try:
        start = int(fields[19]) if len(fields) > 19 else 0
        return _Stat(fields[0], int(fields[2]), int(fields[3]), start)
    except ValueError:
        return None


def start_time(pid: int, proc: Path = PROC) -> int | None:
    """``pid``'s start time in clock ticks since boot (``None``: unknown)."""
    try:
        stat = parse_stat((proc / str(pid) / "stat").read_text("utf-8", errors="replace"))
    except OSError:
        return None
    return stat.start if stat is not None else None


def carries(environ: bytes, variable: str, token: str) -> bool:
    """Whether a ``/proc/<pid>/environ`` block sets ``variable`` to ``token``."""
    return f"{variable}={token}".encode() in environ.split(b"\0")


def _read(path: str) -> bytes | None:
    """A small ``/proc`` file's bytes (``None``: gone, or not ours to read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _is_member(entry: str, identities: Iterable[Identity]) -> Identity | None:
    raw = _read(f"{entry}/stat")
    stat = parse_stat(raw.decode("utf-8", "replace")) if raw is not None else None
    if stat is None or stat.state in ("Z", "X", "x"):
        return None  # a zombie is its parent's to reap; it runs nothing
    environ: bytes | None = None
    for identity in identities:
        if identity.leader is not None and identity.leader in (stat.pgid, stat.sid):
            return identity
        if identity.since is not None and stat.start < identity.since:
            continue  # older than the command: not started by it
        if environ is None:
            environ = _read(f"{entry}/environ")
            if environ is None:  # another user's (or gone): never ours
                return None
        if carries(environ, identity.variable, identity.token):
            return identity
    return None


def members(identities: Iterable[Identity], proc: Path = PROC) -> list[int]:
    """Pids of the live processes of any of ``identities`` (never this process)."""
    wanted = list(identities)
    if not wanted or not proc.is_dir():
        return []
    own, uid = str(os.getpid()), os.getuid()
    found = []
    with os.scandir(proc) as entries:
        for entry in entries:
            if not entry.name.isdigit() or entry.name == own:
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
            except OSError:
                continue
            if _is_member(entry.path, wanted) is not None:
                found.append(int(entry.name))
    return found


def _name(pid: int, proc: Path) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    text = " ".join(p.decode("utf-8", "replace") for p in raw.split(b"\0") if p)
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _send(pid: int, sig: int, identities: list[Identity], proc: Path) -> bool:
    """Signal ``pid`` if it is still one of ``identities``' (checked through a pidfd where there is
    one, so a reused pid is never hit); whether the signal was sent."""
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is None or send is None or proc != PROC:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            return True
        return False
    try:
        fd = pidfd_open(pid)
    except OSError:
        return False
    try:
        if _is_member(f"{proc}/{pid}", identities) is None:
            return False
        send(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def stop(identities: Iterable[Identity], grace_s: float = STOP_GRACE_S, proc: Path = PROC) -> list[Stopped]:
    """End every process of ``identities``: SIGTERM, then SIGKILL whatever outlives ``grace_s``.
    Blocking (up to the grace and a little): call it from a worker thread in async code."""
    wanted = list(identities)
    first = members(wanted, proc)
    if not first:
        return []
    names = {pid: _name(pid, proc) for pid in first}
    for pid in first:
        if _send(pid, signal.SIGTERM, wanted, proc):
            _send(pid, signal.SIGCONT, wanted, proc)
    deadline = time.monotonic() + grace_s
    left = first
    while left and time.monotonic() < deadline:
        time.sleep(POLL_S)
        left = members(wanted, proc)
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        if not left:
            break
        for pid in left:
            names.setdefault(pid, _name(pid, proc))
            if _send(pid, signal.SIGKILL, wanted, proc):
                killed.add(pid)
        time.sleep(POLL_S / 5)
        left = members(wanted, proc)
    return [Stopped(pid, names[pid], "SIGKILL" if pid in killed else "SIGTERM") for pid in sorted(names)]


def summary(stopped: list[Stopped], limit: int = 6) -> str:
    """``pid 12 `sleep 300` (SIGTERM), …`` (the first ``limit``, then how many more)."""
    shown = ", ".join(s.describe() for s in stopped[:limit])
    more = len(stopped) - limit
    return f"{shown}, and {more} more" if more > 0 else shown


# --------------------------------------------------------------------------- in flight

_in_flight: dict[str, Identity] = {}
_lock = threading.Lock()


def register(identity: Identity) -> None:
    with _lock:
        _in_flight[identity.token] = identity


def unregister(identity: Identity) -> None:
    with _lock:
        _in_flight.pop(identity.token, None)


def stop_in_flight(grace_s: float = STOP_GRACE_S) -> list[Stopped]:
    """End the processes of every command still running in this process (server shutdown)."""
    with _lock:
        identities = list(_in_flight.values())
        _in_flight.clear()
    return stop(identities, grace_s) if identities else []
