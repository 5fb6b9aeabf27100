"""``retrace hook <agent> [--workspace DIR] [--store DIR]``: one hook call of another agent.

Claude Code or Gemini CLI runs this command at each hook event with the event's JSON on stdin.
It NEVER hurts the agent: it always exits 0, writes nothing on stdout (both agents read it;
Gemini CLI expects JSON or nothing) and records what went wrong in the store's hook log
(``<store>/logs/hooks.log``, capped, one older file kept: :mod:`.hook_log`) — and, when a
server took the event, in the server's log too.

Fast path (standard library only, plus the store's location rule): read stdin (at most
:data:`MAX_INPUT_BYTES`), ``json.loads``, hand ``{"agent", "event"}`` to the server holding the
store (relay method ``hook``). Cold path, when no server answers: :mod:`retrace.cli.hook_cold`
opens the store (creating it), applies the event and closes it; a store another process holds
is waited for (and asked again through the relay) within :data:`LOCK_WAIT_S`, then the event is
logged and dropped (its changes are recorded by the next checkpoint).

The workspace is ``--workspace``, else the folder the agent names in its project variable
(``$CLAUDE_PROJECT_DIR``, ``$GEMINI_PROJECT_DIR``), else the nearest folder at or above the
event's ``cwd`` that already has a store, else that ``cwd``; the store is ``--store``, else the
workspace's default store.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from retrace.cli.hook_log import HookLog
from retrace.relay.client import RelayRefusedError, RelayTimeoutError, forward

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, TextIO

MAX_INPUT_BYTES = 24 << 20
"""The largest hook input read (a ``Write`` carries the whole file): within the relay's 32 MiB."""
RELAY_TIMEOUT_S = 8.0
"""How long the server may take to apply one event (it may be behind an agent's capture): within
the 10 s hook timeout ``retrace integrate`` writes."""
LOCK_WAIT_S = 6.0
"""How long a store held by another process (and no relay answering) is waited for: a few cold
calls in a row (an agent's parallel tool calls) each take their turn within the hook timeout."""
PROJECT_DIR_ENV = {
    "claude-code": ("CLAUDE_PROJECT_DIR",),
    "gemini-cli": ("GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
}
"""Each adapter's ``project_dir_env`` (``retrace.app.hooks``), restated: this is the fast path."""
_AGENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


class HookArgs:
    """``retrace hook``'s arguments, read by hand (argparse, even dataclasses, cost milliseconds
    on every call)."""

    __slots__ = ("agent", "store", "unknown", "workspace")

    def __init__(self) -> None:
        self.agent = ""
        self.workspace: str | None = None
        self.store: str | None = None
        self.unknown: list[str] = []


def parse_args(argv: Sequence[str]) -> HookArgs:
    """``AGENT [--workspace DIR] [--store DIR]`` (also ``--option=value``); anything else is kept
    in ``unknown`` (logged, never an error). ``agent`` is empty when none was given."""
    args = HookArgs()
    words = list(argv)
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if name in ("--workspace", "--store") and (eq or words):
            setattr(args, name[2:], value if eq else words.pop(0))
        elif not word.startswith("-") and not args.agent:
            args.agent = word
        else:
            args.unknown.append(word)
    return args


HELP = """usage: retrace hook [-h] [--workspace PATH] [--store DIR] AGENT

Record one hook event of another agent (its JSON on stdin). Always exits 0 and prints nothing;
problems go to <store>/logs/hooks.log.

positional arguments:
  AGENT             claude-code or gemini-cli

options:
  -h, --help        show this help message and exit
  --workspace PATH  workspace folder (default: the agent's project folder, else the event's cwd)
  --store DIR       store directory (default: the workspace's)
"""


def main(argv: Sequence[str]) -> int:
    """Run one hook call; ALWAYS 0 (``--help`` prints help, as asked)."""
    if any(a in ("-h", "--help") for a in argv):
        print(HELP, end="")
        return 0
    log = HookLog("?")
    quiet: TextIO = Path(os.devnull).open("w")  # noqa: SIM115 (closed below)
    stdout, sys.stdout = sys.stdout, quiet  # nothing may reach the agent's stdout
    try:
        _run(argv, log)
    except BaseException as exc:  # a hook never fails the agent
        log.say(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        sys.stdout = stdout
        quiet.close()
        log.flush()
    return 0


def cmd_hook(args: argparse.Namespace) -> int:  # pragma: no cover (main routes hook first)
    """The parser's handler (``retrace.cli.main`` routes ``hook`` to :func:`main` first)."""
    argv = [args.agent, *(["--workspace", args.workspace] if args.workspace not in (None, ".") else [])]
    return main([*argv, *(["--store", args.store] if args.store else [])])


def _run(argv: Sequence[str], log: HookLog) -> None:
    args = parse_args(argv)
    if not args.agent:
        log.say("usage: retrace hook AGENT (the following arguments are required: AGENT): event not read")
        return
    log.agent = args.agent[:32]
    if args.unknown:
        log.say(f"ignored arguments: {' '.join(args.unknown)[:200]}")
    raw = _read_event(log)
    if raw is not None and isinstance(raw.get("hook_event_name"), str):
        log.hook = raw["hook_event_name"][:64]
    workspace = _workspace(args, raw)
    store = _store(args, workspace)
    log.store = store
    if raw is None:
        return
    if not (args.agent and set(args.agent) <= _AGENT_CHARS and len(args.agent) <= 32):
        log.say(f"unknown agent {args.agent[:64]!r}: event dropped")
        return
    deliver(args.agent, raw, workspace, store, log)


def _read_event(log: HookLog) -> dict[str, Any] | None:
    """The event object on stdin; ``None`` (logged) when there is none or it is not one."""
    try:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError, AttributeError) as exc:
        log.say(f"cannot read stdin: {exc}")
        return None
    if len(data) > MAX_INPUT_BYTES:
        log.say(f"hook input over {MAX_INPUT_BYTES >> 20} MiB: event dropped")
        return None
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        log.say(f"hook input is not JSON ({str(exc)[:200]}): event dropped ({len(data)} bytes)")
        return None
    if not isinstance(raw, dict):
        log.say(f"hook input is a JSON {type(raw).__name__}, not an object: event dropped")
        return None
    return raw


def _workspace(args: HookArgs, raw: dict[str, Any] | None) -> Path:
    if args.workspace:
        return Path(args.workspace).expanduser().absolute()
    for name in PROJECT_DIR_ENV.get(args.agent, ()):
        value = os.environ.get(name)
        if value and Path(value).is_absolute() and Path(value).is_dir():
            return Path(value)
    cwd = raw.get("cwd") if raw is not None else None
    if isinstance(cwd, str) and Path(cwd).is_absolute() and Path(cwd).is_dir():
        return _with_store(Path(cwd)) or Path(cwd)
    return Path.cwd()


def _with_store(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that has a store already (``None``: none)."""
    from retrace.engine.store.layout import StoreLayout, default_store_dir

    if os.environ.get("RETRACE_STORE"):
        return None  # one store for every folder: nothing to learn from walking up
    for folder in [start, *start.parents][:64]:
        if StoreLayout(default_store_dir(folder)).meta.exists():
            return folder
    return None


def _store(args: HookArgs, workspace: Path) -> Path:
    if args.store:
        return Path(args.store).expanduser().absolute()
    from retrace.engine.store.layout import default_store_dir  # the store's location rule only

    return default_store_dir(workspace)


def deliver(agent: str, raw: dict[str, Any], workspace: Path, store: Path, log: HookLog) -> None:
    """The event to the server holding ``store``, else applied here (:mod:`.hook_cold`)."""
    answered = relay(agent, raw, workspace, store, log)
    if answered is not False:
        return
    from retrace.cli import hook_cold  # the engine: only when no server took the event

    def ask_again() -> bool | None:
        return relay(agent, raw, workspace, store, log)

    deadline = time.monotonic() + LOCK_WAIT_S
    if hook_cold.apply(agent, raw, (workspace, store), log, ask_again, deadline=deadline):
        # The agent's next calls come within seconds: a headless holder keeps the store open for
        # them (the same as after a cold `retrace checkpoint`; RETRACE_NO_HOLDER=1 turns it off).
        from retrace.cli.forward import start_holder

        start_holder(store, workspace)


def relay(agent: str, raw: dict[str, Any], workspace: Path, store: Path, log: HookLog) -> bool | None:
    """``True``: a server applied the event; ``None``: a server has it but refused or did not
    answer in time (logged, nothing more to do); ``False``: no server took it (or it died
    answering): the caller applies it."""
    params = {"agent": agent, "event": raw}
    try:
        result = forward(store, "hook", params, RELAY_TIMEOUT_S, workspace=workspace)
    except RelayTimeoutError as exc:
        log.say(f"{exc}: it may still record the event")
        return None
    except RelayRefusedError as exc:
        if exc.code == "internal":  # the connection broke (a killed server) or it is busy
            log.say(f"the Retrace server did not take the event ({exc}): recording it here")
            return False
        log.say(f"refused by the Retrace server: {exc}")
        return None
    if result is None:
        return False
    for note in result.get("notes") or ():
        log.say(str(note))
    return True
