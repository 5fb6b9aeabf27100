"""Seed a store for the Health panel: a short agent session (``seed_story``: turns of edit_file
calls, one code restore), a large incompressible file recorded by a tool checkpoint (so the
store has real bytes to weigh), then code restores through the ``retrace`` CLI, each with a
different reason (one with none), exactly as a user's restores are journaled. The storage
series gets the store's real size measured after each step, a minute apart ending now (the
server adds at most a point a minute, so a live series would take that long to grow).

``python tests/e2e/seed_health.py WORKSPACE --store DIR`` prints JSON: the session id, the
checkpoints made, the reasons given and the store's size in bytes now (``retrace metrics``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from seed_story import seed

from retrace.app.metrics.storage import Series
from retrace.engine import Engine
from retrace.engine.store.cache_file import write_cache_json
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.storage_usage import usage

RETRACE = Path(sys.executable).with_name("retrace")
BIG = "assets/recording.bin"
REASONS = ("brokeTests", "wrongApproach", "brokeTests", "unwantedChanges", None)


def cli(workspace: Path, store: Path, *args: str) -> object:
    cmd = [str(RETRACE), *args, "--json", "--workspace", str(workspace), "--store", str(store)]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--big-bytes", type=int, default=3 * 1024 * 1024)
    args = parser.parse_args(argv)
    ws, store = args.workspace, args.store
    layout = StoreLayout(store)
    sizes: list[int] = []
    engine = Engine.open(ws, store)
    try:
        sid, created = seed(engine, ws, 3, 4)
        sizes.append(usage(layout).total)
        big = ws / BIG
        big.parent.mkdir(parents=True, exist_ok=True)
        big.write_bytes(os.urandom(args.big_bytes))
        engine.checkpoint(f"write_file: {BIG}", [BIG], kind="tool", session_id=sid, tool="write_file")
        sizes.append(usage(layout).total)
    finally:
        engine.close()
    targets = created[1::2]
    for target, reason in zip(targets, REASONS, strict=False):
        extra = ["--reason", reason] if reason else []
        cli(ws, store, "restore", target, "--mode", "code", "--force", *extra)
        sizes.append(usage(layout).total)
    # The series is these measurements, backdated a minute apart up to two minutes ago (what the
    # first window's server measured of the empty store is superseded; Series.add only appends).
    start = time.time() - 60 * (len(sizes) + 1)
    points = [[round(start + 60 * i, 3), size] for i, size in enumerate(sizes)]
    write_cache_json(Series(layout).path, {"points": points}, "storage series")
    metrics = cli(ws, store, "metrics")
    assert isinstance(metrics, dict)
    json.dump(
        {
            "sessionId": sid,
            "checkpoints": len(created) + 1,
            "reasons": [r for r in REASONS if r],
            "usedBytes": metrics["storage"]["usedBytes"],
            "restoresByReason": metrics["restoresByReason"],
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
