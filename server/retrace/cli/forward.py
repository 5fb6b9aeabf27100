"""Command-line calls a running server takes over (:mod:`retrace.relay`), and the headless
holder that keeps them fast when no editor runs (:mod:`retrace.relay.holder`).

:func:`relayed` is THE path of every call an agent makes after each tool call (``retrace
checkpoint``, the hook commands): hand it to the process holding the store (the editor's server
or a headless holder) when one answers; else do it cold (open the store in this process) and then
start a headless holder (:func:`start_holder`) so the next call is forwarded. A cold call that
finds the store locked while a relay may come up (a holder or a server still opening the store,
another cold call) waits for that relay, at most :data:`LOCKED_WAIT_S`, then reports the lock.
Kept light on purpose (the relay client, the standard library; the engine only to name the
default store, and once the cold path runs): this runs before any store is opened.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from retrace.relay import holder, wire
from retrace.relay.client import RelayRefusedError, answering, forward
from retrace.text import terminal_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; only the type checker needs it
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

CLI_SESSION = "cli"
"""Session of every checkpoint the command line records: one group, not one session per call."""

REFUSED_EXIT = 1
"""Exit code when the server holding the store refused the call (as for any command error)."""
LOCKED_WAIT_S = 10.0
"""How long a cold call that finds the store locked waits for the holder's relay to answer."""
LOCKED_POLL_S = 0.25
"""Between two cold attempts on a locked store, how long the relay is watched for."""
HOLDER_MODULE = "retrace.cli.holder"


def relayed(
    store: Path, workspace: Path, method: str, params: dict[str, Any], cold: Callable[[], T]
) -> tuple[dict[str, Any] | None, T | None]:
    """``(result, None)`` when the process holding ``store`` ran ``method(params)``; else
    ``(None, cold())`` — the call done in this process, after which a headless holder is started.
    :class:`RelayRefusedError` when the holder refused; ``cold``'s own errors as they are."""
    result = forward(store, method, params, workspace=workspace)
    if result is not None:
        return result, None
    deadline = time.monotonic() + LOCKED_WAIT_S
    while True:
        try:
            value = cold()
        except Exception as exc:
            if not _locked(exc) or not _relay_possible(store) or time.monotonic() >= deadline:
                raise
            # A headless holder still opening the store: wait for its relay (while it lives)
            # rather than asking the lock again (each refusal counts as a lock conflict).
            pid = getattr(exc, "pid", None)
            starting = holder.is_holder(store, pid)
            until = deadline if starting else min(deadline, time.monotonic() + LOCKED_POLL_S)
            result = _await_relay(
                store, workspace, method, params, until=until, pid=pid if starting else None
            )
            if result is not None:
                return result, None
            continue
        start_holder(store, workspace)
        return None, value


def _locked(exc: Exception) -> bool:
    from retrace.engine.errors import StoreLocked  # the cold path imported the engine already

    return isinstance(exc, StoreLocked)


def _relay_possible(store: Path) -> bool:
    """Whether a relay could ever answer for ``store`` here (a platform with Unix sockets, a
    relay directory that is missing or safely ours): else waiting for one is pointless."""
    try:
        directory = wire.socket_path(store).parent
        if os.path.lexists(directory):
            wire.check_private_dir(directory)
    except wire.RelayUnavailableError:
        return False
    return True


def _await_relay(
    store: Path, workspace: Path, method: str, params: dict[str, Any], *, until: float, pid: int | None
) -> dict[str, Any] | None:
    """Forward as soon as a relay answers for ``store`` before ``until`` (or before process
    ``pid``, the lock's holder, ends); ``None`` if none did."""
    path = wire.socket_path(store)
    while time.monotonic() < until and (pid is None or holder.alive(pid)):
        if path.exists() and (result := forward(store, method, params, workspace=workspace)) is not None:
            return result
        time.sleep(holder.POLL_S)
    return None


def start_holder(store: Path, workspace: Path) -> None:
    """Start a headless holder for ``store`` (detached: its own session, stdio on /dev/null),
    unless :data:`retrace.relay.holder.NO_HOLDER_ENV` says not to, this platform has no relay,
    or one already answers. Never fails the caller: a holder that cannot start is only slower."""
    if not holder.enabled() or not _relay_possible(store) or answering(store):
        return
    import subprocess  # only on the cold path

    argv = [sys.executable, "-m", HOLDER_MODULE, "--workspace", str(workspace), "--store", str(store)]
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        print(f"retrace: warning: no background holder started: {terminal_text(str(exc))}", file=sys.stderr)


def _refused(message: str) -> int:
    first = message.strip().splitlines()[0] if message.strip() else "the Retrace server refused the call"
    print(f"retrace: error: {terminal_text(first)}", file=sys.stderr)
    return REFUSED_EXIT


def _store_and_workspace(args: argparse.Namespace) -> tuple[Path, Path] | None:
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        return None  # the usual path reports it
    workspace = workspace.resolve()
    if args.store:
        return Path(args.store).expanduser().absolute(), workspace
    from retrace.engine.store.home import default_store_dir  # only without --store (the pointer too)

    return default_store_dir(workspace), workspace


def checkpoint(args: argparse.Namespace, session: str, cold: Callable[[], int]) -> int | None:
    """``retrace checkpoint``: through the process holding the store, else ``cold()`` in this
    process (:func:`relayed`); its exit code (the checkpoint's id or JSON printed, or the refusal
    reported). ``None``: the workspace is unusable, the usual path reports it."""
    where = _store_and_workspace(args)
    if where is None:
        return None
    store, workspace = where
    params = {"label": args.label, "paths": args.paths, "kind": "manual", "sessionId": session}
    try:
        result, code = relayed(store, workspace, "checkpoint", params, cold)
    except RelayRefusedError as exc:
        return _refused(str(exc))
    if result is None:
        return code
    cp = result.get("checkpoint")
    if not isinstance(cp, dict) or not isinstance(cp.get("id"), str):
        return _refused("the Retrace server's answer names no checkpoint")
    if args.json:
        print(json.dumps(cp, indent=2, ensure_ascii=False))
    else:
        print(terminal_text(cp["id"]))
    return 0
