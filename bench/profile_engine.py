"""``python -m bench.profile_engine``: where Retrace spends its time on a benchmark workspace (cProfile).

Generates a workspace, opens the engine, replays the trace, and profiles one phase: ``warm``
(re-open with nothing changed), ``edit`` / ``shell`` (every edit / shell checkpoint of the trace)
or ``restore`` (``--back N`` steps back, from the final state). Prints the top functions by cumulative time,
so a missed target in RESULTS.md can be traced to its cause.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.retrace_engine import RetraceStrategy
from bench.trace import apply_step, make_trace
from bench.workspace import generate

PHASES = ("warm", "edit", "shell", "restore")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile_engine", description=__doc__.split("\n\n")[0])
    p.add_argument("phase", choices=PHASES)
    p.add_argument("--size", type=int, default=50_000)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--back", type=int, default=1, help="restore: how many checkpoints back")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "profile")
    args = p.parse_args(argv)

    if args.work.exists():
        shutil.rmtree(args.work)
    ws = generate(args.work / "ws", args.size, args.seed)
    trace = make_trace(ws, args.calls, args.seed)
    os.sync()
    strategy = RetraceStrategy(ws.root, args.work / "store")
    ids = [strategy.open()]
    profiler = cProfile.Profile()
    if args.phase == "warm":
        strategy.close()
        t0 = time.perf_counter()
        profiler.runcall(strategy.open)
        print(f"warm open: {(time.perf_counter() - t0) * 1000:.1f} ms", file=sys.stderr)
    for step in trace:
        apply_step(ws.root, step)
        if args.phase == step.kind:
            ids.append(profiler.runcall(strategy.checkpoint, step))
        else:
            ids.append(strategy.checkpoint(step))
    if args.phase == "restore":
        t0 = time.perf_counter()
        profiler.runcall(strategy.restore, ids[max(0, len(ids) - 1 - args.back)])
        print(f"restore {args.back} back: {(time.perf_counter() - t0) * 1000:.1f} ms", file=sys.stderr)
    strategy.close()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(args.top)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
