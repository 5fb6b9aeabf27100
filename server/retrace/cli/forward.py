"""Command-line calls a running server takes over (:mod:`retrace.relay`).

While the editor's server holds the workspace's store, ``retrace checkpoint`` cannot take the
store's lock; it hands the call to that server instead. Kept light on purpose (the relay client,
the standard library; the engine only to name the default store): this runs before any store is
opened. ``None`` from a function here means "no server took it: open the store as usual" (and
report the lock as before when one is held but no relay answers).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from retrace.relay.client import RelayRefusedError, forward
from retrace.text import terminal_text

CLI_SESSION = "cli"
"""Session of every checkpoint the command line records: one group, not one session per call."""

REFUSED_EXIT = 1
"""Exit code when the server holding the store refused the call (as for any command error)."""


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


def checkpoint(args: argparse.Namespace, session: str) -> int | None:
    """``retrace checkpoint`` through the server holding the store: its exit code (the
    checkpoint's id or JSON printed, or the server's refusal reported); ``None``: no server
    took it."""
    where = _store_and_workspace(args)
    if where is None:
        return None
    store, workspace = where
    params = {"label": args.label, "paths": args.paths, "kind": "manual", "sessionId": session}
    try:
        result = forward(store, "checkpoint", params, workspace=workspace)
    except RelayRefusedError as exc:
        return _refused(str(exc))
    if result is None:
        return None
    cp = result.get("checkpoint")
    if not isinstance(cp, dict) or not isinstance(cp.get("id"), str):
        return _refused("the Retrace server's answer names no checkpoint")
    if args.json:
        print(json.dumps(cp, indent=2, ensure_ascii=False))
    else:
        print(terminal_text(cp["id"]))
    return 0
