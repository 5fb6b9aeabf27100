"""What an incremental journal reader costs: the metrics reader (``engine/store_stats/journal_reader``, one
journal cursor per journal) reading a long journal once, then reading on after each single
append; and a whole typed read (``Engine.events``) for scale.

Only APIs that exist on both sides are used, so the same file runs against another checkout:
``PYTHONPATH=<checkout>/server .venv/bin/python -m bench.journal_cursor`` — compare the
printed lines side by side (``bench/RESULTS_journal.md``).

Usage: ``.venv/bin/python -m bench.journal_cursor [EVENTS] [APPENDS]`` (default 20,000 events,
200 appends). Prints milliseconds (best of 3) and the load average.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import retrace
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store.events import (
    MessageEvent,
    RestoreStatsEvent,
    ToolCallIntentEvent,
    ToolCallResultEvent,
    UsageEvent,
)
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.journal_reader import JournalReader


def _best(fn: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    appends = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    with tempfile.TemporaryDirectory() as d:
        ws, store = Path(d) / "ws", Path(d) / "store"
        ws.mkdir()
        (ws / "a.txt").write_text("x")
        with Engine.open(ws, store, config=EngineConfig(watcher=False)) as e:
            sid = e.new_session("ses_bench")
            for i in range(n // 4):
                text = [{"type": "text", "text": "word " * 40}]
                e.append_event(
                    MessageEvent(id=f"m{i}", parent=None, role="assistant", content=text), durable=False
                )
                e.append_event(
                    ToolCallIntentEvent(id=f"c{i}", tool="edit_file", input={"path": "a.txt"}), durable=False
                )
                e.append_event(ToolCallResultEvent(id=f"c{i}", tool="edit_file", status="ok"), durable=False)
                e.append_event(UsageEvent(input_tokens=10, output_tokens=5), durable=False)
            journal = StoreLayout(store).journal(sid)
            size = journal.stat().st_size

            first = _best(lambda: JournalReader().events(journal))
            reader = JournalReader()
            reader.events(journal)

            spent = 0.0
            for _ in range(appends):  # only the reads are timed
                e.append_event(RestoreStatsEvent(duration_ms=1.0, kind="applied"), durable=False)
                t = time.perf_counter()
                reader.events(journal)
                spent += time.perf_counter() - t
            on = spent * 1000 / appends
            whole = _best(lambda: sum(1 for _ in e.events(sid)))
    load = os.getloadavg()[0]
    print(f"retrace from {Path(retrace.__file__).parent}")
    print(f"journal: {n} events, {size / 1e6:.1f} MB; load average {load:.2f}")
    print(f"metrics reader, first read      : {first:8.1f} ms")
    print(f"metrics reader, read on (1 line): {on:8.3f} ms per append")
    print(f"Engine.events, whole journal    : {whole:8.1f} ms")


if __name__ == "__main__":
    main()
