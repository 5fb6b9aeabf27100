"""``retrace metrics [--json]``: the store's metrics in the Prometheus text format (or the
structured snapshot), built by ``app/metrics`` from the store's files exactly as the server
builds them (so it works beside a running server: no lock is taken)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from retrace.app.metrics.collect import collect, snapshot
from retrace.camel import dump
from retrace.engine.errors import StoreNotInitialised
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.engine.store_stats.journal_fold import METRICS_TYPES
from retrace.engine.store_stats.journal_reader import JournalReader
from retrace.text import terminal_text


def cmd_metrics(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).expanduser().resolve()
    store = Path(args.store).expanduser().absolute() if args.store else default_store_dir(workspace)
    if not StoreLayout(store).meta.exists():
        raise StoreNotInitialised(f"no Retrace store at {store}")
    # One read: only the metrics' own lines are decoded (not the tool calls the status bar counts).
    collected = collect(store, workspace, args.budget_bytes, reader=JournalReader(METRICS_TYPES))
    if args.json:
        payload: dict[str, Any] = dump(snapshot(collected, text=False))
        payload.pop("text", None)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(terminal_text(snapshot(collected).text, keep_newlines=True), end="")
    return 0
