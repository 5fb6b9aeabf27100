"""``retrace metrics [--json]``: the store's metrics in the Prometheus text format (or the
structured snapshot), built by ``app/metrics`` from the store's files exactly as the server
builds them (so it works beside a running server: no lock is taken)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrace.app.metrics.collect import collect, snapshot
from retrace.camel import dump
from retrace.engine.config import RetentionPolicy
from retrace.engine.errors import StoreNotInitialised
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.text import terminal_text


def _positive_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {text!r}")
    return value


def add_parser(add: Callable[..., argparse.ArgumentParser], *parents: argparse.ArgumentParser) -> None:
    p = add(
        "metrics",
        "checkpoint, restore and storage metrics in the Prometheus text format (--json: structured)",
        *parents,
    )
    p.add_argument(
        "--budget-bytes",
        type=_positive_bytes,
        default=RetentionPolicy().max_bytes,
        metavar="N",
        help="the storage budget alerts are measured against (retention maxBytes; default %(default)s)",
    )
    p.set_defaults(handler=cmd_metrics)


def cmd_metrics(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).expanduser().resolve()
    store = Path(args.store).expanduser().absolute() if args.store else default_store_dir(workspace)
    if not StoreLayout(store).meta.exists():
        raise StoreNotInitialised(f"no Retrace store at {store}")
    collected = collect(store, workspace, args.budget_bytes)
    if args.json:
        payload: dict[str, Any] = dump(snapshot(collected, text=False))
        payload.pop("text", None)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(terminal_text(snapshot(collected).text, keep_newlines=True), end="")
    return 0
