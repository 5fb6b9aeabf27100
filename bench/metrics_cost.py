"""``python -m bench.metrics_cost``: what reading the metrics costs beside what they measure.

A store of ``--sessions`` sessions × ``--checkpoints`` tool checkpoints each (plus a restore
every 20) is built through the engine API in a temporary folder. Then, side by side in one run:

- ``checkpoint``: one tool checkpoint (the thing the metrics count), median of ``--repeat``;
- ``metrics cold``: :func:`retrace.app.metrics.collect.collect` in a fresh child process (every
  journal read from the start: what ``retrace metrics`` pays);
- ``metrics warm``: the same call again in one process after one more checkpoint (journals are
  read on from where they stopped: what the server's scrape endpoint and health view pay).

Printed as a Markdown table with ratios to the checkpoint's median; no assertion (timings are
noisy; the tests check the numbers, this reports the cost).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from retrace.app.metrics.collect import collect
from retrace.engine import Engine
from retrace.engine.config import EngineConfig

BUDGET = 2 << 30


def build(ws: Path, store: Path, sessions: int, per_session: int) -> int:
    ws.mkdir()
    for i in range(50):
        (ws / f"f{i}.txt").write_text(f"file {i}\n")
    made = 0
    for s in range(sessions):
        with Engine.open(ws, store, session_id=f"s{s}", config=EngineConfig()) as engine:
            first = engine.head
            for n in range(per_session):
                path = ws / f"f{n % 50}.txt"
                path.write_text(f"session {s} step {n}\n")
                engine.checkpoint(f"step {n}", [path], kind="tool")
                made += 1
                if n % 20 == 19 and first is not None:
                    engine.restore(first.id, force=True)
                    made += 1
    return made


def cold(ws: Path, store: Path) -> float:
    code = (
        "import sys,time,json;from pathlib import Path;"
        "from retrace.app.metrics.collect import collect;"
        "t=time.perf_counter();collect(Path(sys.argv[1]),Path(sys.argv[2]),int(sys.argv[3]),record=False);"
        "print(json.dumps(time.perf_counter()-t))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(store), str(ws), str(BUDGET)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--checkpoints", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="retrace-metrics-bench-") as tmp:
        ws, store = Path(tmp) / "ws", Path(tmp) / "store"
        made = build(ws, store, args.sessions, args.checkpoints)
        cps: list[float] = []
        colds: list[float] = []
        warms: list[float] = []
        collect(store, ws, BUDGET, record=False)  # this process's journal cache, read to the end
        with Engine.open(ws, store, session_id="bench", config=EngineConfig()) as engine:
            for n in range(args.repeat):
                path = ws / "f0.txt"
                path.write_text(f"bench {n}\n")
                t = time.perf_counter()
                engine.checkpoint("bench", [path], kind="tool")
                cps.append(time.perf_counter() - t)
                t = time.perf_counter()
                collect(store, ws, BUDGET, record=False)
                warms.append(time.perf_counter() - t)
        for _ in range(max(3, args.repeat // 5)):
            colds.append(cold(ws, store))
    base = statistics.median(cps)
    print(f"store: {args.sessions} sessions, {made} checkpoints\n")
    print("| operation | median ms | × checkpoint |")
    print("|---|---:|---:|")
    for name, xs in (("checkpoint", cps), ("metrics cold (new process)", colds), ("metrics warm", warms)):
        m = statistics.median(xs)
        print(f"| {name} | {m * 1000:.2f} | {m / base:.1f} |")


if __name__ == "__main__":
    main()
