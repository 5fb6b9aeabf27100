"""``retrace remote add|remove|push|pull|status|sessions|open|gc``: thin over
:class:`~retrace.sync.service.RemoteService`.

Every subcommand takes ``--json`` (the service's camelCase models) and the global ``--workspace``
/ ``--store``; errors are one line, :class:`~retrace.sync.errors.RemoteError` exits 2.
``remote open`` creates the workspace folder and its store when missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrace.camel import dump
from retrace.cli.format import quote_name, say, terminal_text
from retrace.engine.store.layout import default_store_dir
from retrace.sync.models import SyncProgress
from retrace.sync.service import RemoteService


def service(args: argparse.Namespace, *, create_workspace: bool = False) -> RemoteService:
    workspace = Path(args.workspace).expanduser()
    if create_workspace:
        workspace.mkdir(parents=True, exist_ok=True)
    workspace = workspace.resolve()
    store = Path(args.store).expanduser().absolute() if args.store else default_store_dir(workspace)
    return RemoteService(store, workspace)


def _out(args: argparse.Namespace, value: Any, text: str) -> int:
    if args.json:
        print(json.dumps(value, indent=2, ensure_ascii=False))
    else:
        say(text)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    config = service(args).add(
        args.name, args.url, endpoint=args.endpoint, region=args.region,
        workspace_name=args.workspace_name, encrypt=args.encrypt,
    )  # fmt: skip
    where = quote_name(f"{config.url.rstrip('/')}/{config.workspace_name}")
    extra = f", encrypted (key {config.key_id})" if config.encrypt else ""
    return _out(args, dump(config), f"remote {quote_name(config.name)} → {where}{extra}")


def cmd_remove(args: argparse.Namespace) -> int:
    service(args).remove(args.name)
    return _out(
        args, {"removed": args.name}, f"remote {quote_name(args.name)} removed (the bucket is untouched)"
    )


def _progress(args: argparse.Namespace) -> Callable[[SyncProgress], None] | None:
    if args.json or not sys.stderr.isatty():
        return None

    def show(p: SyncProgress) -> None:
        print(
            f"\r{p.phase}: {p.done}/{p.total} ({p.bytes_done >> 10} KiB)", end="", file=sys.stderr, flush=True
        )

    return show


def cmd_push(args: argparse.Namespace) -> int:
    r = service(args).push(args.name, progress=_progress(args))
    text = (
        f"{r.remote}: up to date"
        if r.up_to_date
        else f"{r.remote}: pushed {r.blobs} blob(s) in {r.packs} pack(s), {r.segments} segment(s), "
        f"{r.bytes} bytes in {r.seconds:.2f} s"
    )
    return _out(args, dump(r), text)


def _skipped(lines: list[str], what: str = "damaged, left out") -> int:
    """What an open or a pull left out (or verify found) because it failed its checks: one line
    each on stderr, and exit 4 (damage found) — what was intact was still brought in."""
    for line in lines:
        print(f"retrace: {what}: {line}", file=sys.stderr)
    return 4 if lines else 0


def cmd_pull(args: argparse.Namespace) -> int:
    r = service(args).pull(args.name)
    _out(
        args,
        dump(r),
        f"{r.remote}: {r.sessions} session(s) updated, {r.segments} segment(s), {r.bytes} bytes",
    )
    return _skipped(r.skipped)


def cmd_status(args: argparse.Namespace) -> int:
    s = service(args).status(args.name)
    lines = [
        f"remote {quote_name(s.remote)}: {quote_name(s.url)}"
        + (f" at {quote_name(s.endpoint)}" if s.endpoint else "")
        + (" (encrypted)" if s.encrypt else ""),
        f"last push: {s.last_push or 'never'}",
        f"pending: {s.pending_checkpoints} checkpoint(s), {s.pending_bytes} bytes; outbox: {s.outbox}",
    ]
    if s.last_error:
        lines.append(f"last error: {terminal_text(s.last_error)}")
    return _out(args, dump(s), "\n".join(lines))


def cmd_sessions(args: argparse.Namespace) -> int:
    rows = service(args).sessions(args.name)
    text = "\n".join(
        f"{'*' if s.opened_locally else ' '} {s.session_id}  {s.last_at or ''}  {terminal_text(s.machine)}  "
        f"{quote_name(s.workspace_name)}  {s.bytes} bytes  (store {s.store_id}, gen {s.generation})"
        for s in rows
    )
    return _out(args, [dump(s) for s in rows], text or "no sessions in the remote")


def cmd_open(args: argparse.Namespace) -> int:
    r = service(args, create_workspace=True).open(args.session, name=args.remote, store_id=args.store_id)
    _out(
        args, dump(r), f"opened session {r.session_id} from store {r.store_id}: {r.checkpoints} checkpoint(s)"
    )
    return _skipped(r.skipped)


def cmd_verify(args: argparse.Namespace) -> int:
    r = service(args).verify(args.name, packs=args.packs)
    text = (
        f"{r.remote}: {r.segments} segment(s) ({r.unsealed} unsealed, from 0.1.0), {r.packs} pack(s)"
        f"{' hashed' if r.packs_hashed else ''}: {len(r.damaged)} damaged"
    )
    _out(args, dump(r), text)
    return _skipped(r.damaged, "damaged")


def cmd_gc(args: argparse.Namespace) -> int:
    r = service(args).gc(
        args.name, dry_run=args.dry_run, grace_hours=args.grace_hours,
        retention_days=args.retention_days, local=args.local,
    )  # fmt: skip
    text = (
        f"{r.remote}{' (dry run)' if r.dry_run else ''}: {r.sessions_expired} session(s) expired, "
        f"{r.packs_condemned} pack(s) condemned, {r.packs_deleted} deleted ({r.bytes_freed} bytes); "
        f"local: {r.local_blobs_dropped} blob(s) dropped ({r.local_bytes_freed} bytes)"
    )
    return _out(args, dump(r), text)
