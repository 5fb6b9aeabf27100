"""The agent's terminal: one persistent shell state per agent session (current directory and the
environment changes its commands made), how it is carried between ``run_command`` calls, what of
it a checkpoint records, and how a recorded state is brought back.

There is no long-lived shell process. Each command starts from the session's state (its cwd,
the server's base environment for tool commands with the state's changes applied) and is wrapped
(bash or POSIX sh) so that, however the shell ends — normally, ``exit N``, a failure under
``set -e`` — it writes its final ``pwd`` and ``env -0`` to a private temporary folder outside the
workspace; :class:`ShellRun` reads them back after the process ended. The environment changes are
measured against the environment the command started with AFTER the login profile ran (a profile
that prepends to ``PATH`` must not make it grow with every call). A command that timed out, was
cancelled, replaced the shell (``exec``) or replaced the wrapper's ``EXIT`` trap leaves no
read-back: the previous state is kept. On Windows (cmd.exe, PowerShell) commands keep today's
behaviour: every call starts at the workspace root with the base environment (no state).

Rules (pure, table-tested in ``tests/agent/test_terminal.py``):

* **cwd** stays inside the workspace: a command that ends outside it (``cd /tmp``, or into a
  symlink whose target is outside) leaves the cwd at the root, and its result says so; a recorded
  directory that no longer exists also starts the next command at the root, said in its result.
* **Never carried**: the model API credentials and their hand-off variables
  (:mod:`retrace.credentials`), the shell's own bookkeeping (``PWD``, ``OLDPWD``, ``SHLVL``,
  ``_``), and variables whose name or value is not valid UTF-8 (they could not be recorded).
* **Values recorded only for an allowlist** (:data:`RECORDED_VALUES`: ``PATH``, ``VIRTUAL_ENV``,
  ``NODE_ENV``, the locale, ``JAVA_HOME``…), and only when the value holds no known secret
  format (:mod:`retrace.redact`); every other variable is recorded by NAME only (``hidden``):
  ``REDIS_URL``, webhook URLs, keys, DSNs and whatever name nobody foresaw never reach a
  checkpoint, the journal or a bucket. The live session (in memory) still has every value.
* **Restore** of a recorded state (a conversation restore, a restart): a variable recorded by
  name cannot be brought back by value; the session keeps its live value when it still has one
  (a conversation restore in the same server), else — after a server restart, or a conversation
  opened on another machine — the variable is left unset; :func:`revive` says which in its
  notes, and they reach the model with the next command's result.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from retrace import credentials
from retrace.agent.processes import CALL_TOKEN_VARIABLE
from retrace.engine.models import TerminalState
from retrace.redact import has_secret

SHELL_MANAGED = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
"""Variables the shell maintains itself (the cwd is tracked on its own)."""
PROCESS_TOKENS = frozenset({CALL_TOKEN_VARIABLE, "RETRACE_BACKGROUND_TASK"})
"""Each command's own identity (:mod:`retrace.agent.processes`): set fresh for every command."""

RECORDED_VALUES = frozenset(
    {
        "PATH",
        "VIRTUAL_ENV",
        "VIRTUAL_ENV_PROMPT",
        "CONDA_DEFAULT_ENV",
        "CONDA_PREFIX",
        "NODE_ENV",
        "PYTHONPATH",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "GOPATH",
        "GOROOT",
        "JAVA_HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUST_BACKTRACE",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "EDITOR",
        "PAGER",
        "CI",
    }
)
"""The variables whose VALUES a checkpoint records (with the ``LC_*`` locale ones): known to be
harmless. Every other variable is recorded by name only — an allowlist, so a secret under a name
nobody foresaw (``REDIS_URL``, ``WEBHOOK``, ``DSN``) is never written."""
RECORDED_PREFIXES = ("LC_",)


def value_recorded(name: str, value: str) -> bool:
    """Whether a checkpoint records this variable's value (else its name only): an allowlisted
    name whose value holds no known secret format (a ``PATH`` with a password in a URL is not)."""
    allowed = name in RECORDED_VALUES or name.startswith(RECORDED_PREFIXES)
    return allowed and not has_secret(value)


def looks_secret(name: str, value: str = "") -> bool:
    """Whether a variable is recorded by name only (the complement of :func:`value_recorded`)."""
    return not value_recorded(name, value)


DISPLAY_VALUE_CHARS = 40
DISPLAY_MAX_VARS = 8


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def carried(name: str, value: str = "") -> bool:
    """Whether a change to ``name`` is kept in the session's state at all."""
    never = SHELL_MANAGED | PROCESS_TOKENS | set(credentials.SECRETS) | credentials.HANDOFF_VARS
    return name not in never and _utf8(name) and _utf8(value)


# --------------------------------------------------------------------------- the live state


@dataclass(frozen=True)
class ShellState:
    """A session's live shell state: values of every changed variable, secrets included (it
    never leaves the server's memory; :meth:`record` is what is written)."""

    cwd: str = ""
    """Workspace-relative, POSIX-style; ``""`` is the workspace root."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set or changed relative to the base environment."""
    unset: frozenset[str] = frozenset()
    """Base variables removed."""

    def spawn_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment a command of this session starts with."""
        env = {k: v for k, v in base.items() if k not in self.unset}
        env.update(self.env)
        return env

    def record(self) -> TerminalState:
        """What a checkpoint records: the values of allowlisted variables, the names of the rest
        (:func:`value_recorded`), names sorted."""
        shown = {k: v for k, v in sorted(self.env.items()) if not looks_secret(k, v)}
        hidden = sorted(k for k, v in self.env.items() if looks_secret(k, v))
        return TerminalState(cwd=self.cwd, env=shown, hidden=hidden, unset=sorted(self.unset))


def normalized(cwd: str, env: Mapping[str, str], unset: set[str], base: Mapping[str, str]) -> ShellState:
    """A state with no entry that only repeats the base (a variable set back to its base value,
    an unset of a variable the base does not have)."""
    kept = {k: v for k, v in env.items() if base.get(k) != v}
    gone = frozenset(k for k in unset if k in base and k not in kept)
    return ShellState(cwd, kept, gone)


def after_command(
    state: ShellState, start: Mapping[str, str], end: Mapping[str, str], base: Mapping[str, str]
) -> ShellState:
    """``state`` with the environment changes one command made (``start``: its environment once
    the shell had started, ``end``: at its exit) applied; the cwd is left to :func:`resolve_cwd`."""
    env = dict(state.env)
    unset = set(state.unset)
    for name, value in end.items():
        if start.get(name) != value and carried(name, value):
            env[name] = value
            unset.discard(name)
    for name in start:
        if name not in end and carried(name):
            env.pop(name, None)
            unset.add(name)
    return normalized(state.cwd, env, unset, base)


def resolve_cwd(workspace: Path, pwd: str) -> str | None:
    """The workspace-relative form of the directory a command ended in; ``None`` when it is
    outside the workspace (symlinks resolved) or cannot be recorded."""
    if not pwd or not _utf8(pwd):
        return None
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(pwd))
    if real == root:
        return ""
    try:
        rel = real.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix()


NOT_RECORDED = "value not recorded (only known harmless variables' values are)"
"""Notes name the variables after it (never ``NAME: …``, which reads as a secret assignment)."""
LEFT_UNSET = "left unset (set it again if it is needed)"


def revive(
    record: TerminalState | None, live: ShellState | None, base: Mapping[str, str]
) -> tuple[ShellState, list[str]]:
    """The live state a recorded one stands for, and what could not be brought back. A hidden
    variable keeps the session's live value when it still has one (set by its commands, or the
    base's and not removed); otherwise it is left unset."""
    if record is None:
        return ShellState(), []
    env = dict(record.env)
    unset = set(record.unset)
    kept: list[str] = []
    lost: list[str] = []
    for name in record.hidden:
        if live is not None and name in live.env:
            env[name] = live.env[name]
            kept.append(name)
        elif live is not None and name in base and name not in live.unset:
            kept.append(name)
        else:
            unset.add(name)
            lost.append(name)
    notes = []
    if kept:
        notes.append(f"{NOT_RECORDED}: {', '.join(kept)}; kept the session's current value")
    if lost:
        notes.append(f"{NOT_RECORDED}: {', '.join(lost)}; {LEFT_UNSET}")
    return normalized(record.cwd, env, unset, base), notes


def describe(state: TerminalState | None) -> str | None:
    """One line for the checkpoint details, e.g.
    ``Terminal: cwd `src`, NODE_ENV=test, API_TOKEN=(not recorded)``;
    ``None`` when the state is the default one (root, no change)."""
    if state is None or not (state.cwd or state.env or state.hidden or state.unset):
        return None
    parts = [f"cwd `{state.cwd}`"] if state.cwd else []
    names = sorted([*state.env, *state.hidden, *state.unset])
    for name in names[:DISPLAY_MAX_VARS]:
        if name in state.env:
            value = state.env[name].replace("\n", "⏎")
            if len(value) > DISPLAY_VALUE_CHARS:
                value = value[: DISPLAY_VALUE_CHARS - 1] + "…"
            parts.append(f"{name}={value}")
        elif name in state.unset and name not in state.hidden:
            parts.append(f"unset {name}")
        else:
            parts.append(f"{name}=(not recorded)")
    if len(names) > DISPLAY_MAX_VARS:
        parts.append(f"+{len(names) - DISPLAY_MAX_VARS} more")
    return "Terminal: " + ", ".join(parts)


# --------------------------------------------------------------------------- one command


@dataclass
class TerminalSession:
    """The live state of one agent session's terminal, shared by its ``run_command`` calls."""

    state: ShellState = field(default_factory=ShellState)
    notes: list[str] = field(default_factory=list)
    """Told to the model with the next command's result (e.g. what a restore could not bring back)."""


PERSISTENT_SHELLS = frozenset({"bash", "sh"})


def wrap(command: str, capture_dir: Path) -> str:
    """The script that runs ``command`` and, on any exit, writes its ``pwd`` and environment to
    ``capture_dir`` (the environment at its start too, after the login profile)."""
    start, pwd, end = (shlex.quote(str(capture_dir / n)) for n in ("start", "pwd", "end"))
    return (
        f"env -0 >{start} 2>/dev/null || :\n"
        "__retrace_exit() { __retrace_rc=$?; "
        f"pwd >{pwd} 2>/dev/null || :; env -0 >{end} 2>/dev/null || :; "
        'exit "$__retrace_rc"; }\n'
        "trap __retrace_exit EXIT\n"
        f"{command}\n"
    )


def parse_env0(data: bytes) -> dict[str, str]:
    """``env -0`` output as a mapping (names and values decoded like ``os.environ``)."""
    env: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            env[os.fsdecode(name)] = os.fsdecode(value)
    return env


class ShellRun:
    """One command of a session: how it is started, and its state read back after it ended."""

    def __init__(self, session: TerminalSession, workspace: Path, base: Mapping[str, str]) -> None:
        self.session = session
        self.workspace = Path(os.path.realpath(workspace))
        self.base = dict(base)
        self.notes = list(session.notes)
        session.notes.clear()
        state = session.state
        self.cwd = self.workspace / state.cwd if state.cwd else self.workspace
        inside = self.cwd.is_dir() and resolve_cwd(self.workspace, str(self.cwd)) == state.cwd
        if state.cwd and not inside:
            self.notes.append(f"`{state.cwd}` is gone; this command started at the workspace root")
            self.cwd = self.workspace
            state = ShellState("", state.env, state.unset)
            session.state = state
        self.env = state.spawn_env(self.base)
        self.dir = Path(tempfile.mkdtemp(prefix="retrace-sh-"))

    def script(self, command: str) -> str:
        return wrap(command, self.dir)

    def finish(self, *, completed: bool) -> list[str]:
        """Read the state back (``completed``: the shell ended by itself, not killed) and update
        the session; returns the notes for the result. Removes the capture folder."""
        try:
            if completed:
                self._read_back()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
        return self.notes

    def _read_back(self) -> None:
        try:
            start = parse_env0((self.dir / "start").read_bytes())
            end = parse_env0((self.dir / "end").read_bytes())
            pwd = os.fsdecode((self.dir / "pwd").read_bytes()).rstrip("\n")
        except OSError:
            self.notes.append("the shell's final cwd and environment were not written; kept the old ones")
            return
        state = after_command(self.session.state, start, end, self.base)
        cwd = resolve_cwd(self.workspace, pwd)
        if cwd is None:
            self.notes.append(f"ended outside the workspace ({pwd}); the next command starts at the root")
            cwd = ""
        self.session.state = ShellState(cwd, state.env, state.unset)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.dir, ignore_errors=True)


def note_text(notes: list[str]) -> str:
    """The notes as the lines appended to a command's result."""
    return "\n".join(f"[terminal: {n}]" for n in notes)
