"""``python -m bench.open_engine``: the engine's warm open against one stat walk, and its
open CPU time and resident memory on a 10,000-checkpoint store.

Two measurements, side by side in one run (ratios, not ms: the machine is shared):

* **warm open vs one stat walk** at each ``--sizes`` (a generated workspace, ``bench.workspace``,
  with a baseline taken once): ``Engine.open`` + ``close`` on the warm store, against the floor's
  stat walk (``bench.tree.walk``: list + ``lstat`` every tracked file). CPU time of this process
  (user + system), median of ``--runs``.
* **long store** (``--long``): the 10,000-checkpoint session of ``tests/e2e/seed_long.py`` (copied
  once): engine-open CPU ms (warm: every cache present), and the resident memory the engine holds
  after the open, measured in a fresh process (``VmRSS`` after the open minus before it; and the
  process peak), with the top ``tracemalloc`` entries.

Reports one Markdown table per part, with the load average.
"""

from __future__ import annotations

import argparse
import inspect
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "open"


def _cpu_ms() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000


def _stat_walk(ws: Path) -> int:
    from bench.tree import IgnoreRules, walk

    # The floor's warm open: list + lstat every tracked file, compare with its cache.
    cache: dict[str, tuple[int, int, int, int]] = {}
    for rel, st in walk(ws, IgnoreRules.for_workspace(ws)):
        cache[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
    return len(cache)


def warm_vs_walk(size: int, runs: int) -> dict[str, float]:
    from bench.workspace import generate
    from retrace.engine.engine import Engine

    base = WORK / f"ws{size}"
    ws, store = base / "ws", base / "store"
    if not (base / "done").exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        generate(ws, size)
        Engine.open(ws, store).close()
        time.sleep(2.1)  # past the racily-clean margin, then once more to settle the stat cache
        Engine.open(ws, store).close()
        (base / "done").write_text("ok\n")
    deferrable = "defer_catch_up" in inspect.signature(Engine.open).parameters
    opens, walks, deferred = [], [], []
    for _ in range(runs):
        c = _cpu_ms()
        _stat_walk(ws)
        walks.append(_cpu_ms() - c)
        c = _cpu_ms()
        Engine.open(ws, store).close()
        opens.append(_cpu_ms() - c)
        if deferrable:  # what a server waits for before its first answer (the walk comes after)
            c = _cpu_ms()
            Engine.open(ws, store, defer_catch_up=True).close()
            deferred.append(_cpu_ms() - c)
    walk_ms, open_ms = statistics.median(walks), statistics.median(opens)
    out = {"files": size, "walk_ms": walk_ms, "open_ms": open_ms, "ratio": open_ms / walk_ms}
    if deferred:
        out["deferred_ms"] = statistics.median(deferred)
    return out


_PROBE = r"""
import json, resource, sys, time, tracemalloc
from pathlib import Path
from retrace.engine.engine import Engine
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
ws, store, trace = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == '1'
Engine.open(ws, store).close()  # caches present: this measures a warm open
before = rss()
if trace:
    tracemalloc.start(25)
r0 = resource.getrusage(resource.RUSAGE_SELF); c0 = r0.ru_utime + r0.ru_stime
eng = Engine.open(ws, store)
r1 = resource.getrusage(resource.RUSAGE_SELF); c1 = r1.ru_utime + r1.ru_stime
out = {"open_cpu_ms": (c1 - c0) * 1000, "rss_mib": rss(), "held_mib": rss() - before,
       "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "checkpoints": len(eng.timeline())}
if trace:
    snap = tracemalloc.take_snapshot()
    out["traced_mib"] = sum(s.size for s in snap.statistics("filename")) / 2**20
    out["top"] = [f"{s.size / 2**20:.1f} MiB {s.traceback[0].filename.split('/server/')[-1]}:"
                  f"{s.traceback[0].lineno}" for s in snap.statistics("lineno")[:8]]
eng.close()
print(json.dumps(out))
"""


def long_store(server: Path, runs: int, trace: bool) -> list[dict[str, object]]:
    import json

    from tests.e2e.seed_long import cached, copy_to

    base = WORK / "long"
    ws, store = base / "ws", base / "store"
    if not (base / "done").exists():
        shutil.rmtree(base, ignore_errors=True)
        ws.mkdir(parents=True)
        copy_to(cached(), ws, store)
        (base / "done").write_text("ok\n")
    env = {**os.environ, "PYTHONPATH": str(server / "server")}
    out = []
    for i in range(runs + trace):  # the traced run (tracemalloc slows it) last, apart
        traced = trace and i == runs
        args = [sys.executable, "-c", _PROBE, str(ws), str(store), "1" if traced else "0"]
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,50000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--long", action="store_true", help="also the 10,000-checkpoint store")
    ap.add_argument("--server", type=Path, default=ROOT, help="checkout whose server/ to run (long store)")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes:
        head = "| files | one stat walk, CPU ms | warm open | ratio | deferred open | ratio |"
        print("\n" + head)
        print("|---|---|---|---|---|---|")
        for size in sizes:
            r = warm_vs_walk(size, args.runs)
            d = r.get("deferred_ms")
            dcells = "n/a | n/a" if d is None else f"{d:.0f} | {d / r['walk_ms']:.2f}×"
            cells = f"{r['walk_ms']:.0f} | {r['open_ms']:.0f} | {r['ratio']:.2f}× | {dcells}"
            print(f"| {size:,} | {cells} |", flush=True)
    if args.long:
        rows = long_store(args.server, args.runs, trace=True)
        traced, rows = rows[-1], rows[:-1]
        cpu = statistics.median(float(str(r["open_cpu_ms"])) for r in rows)
        held = statistics.median(float(str(r["held_mib"])) for r in rows)
        rss = statistics.median(float(str(r["rss_mib"])) for r in rows)
        peak = statistics.median(float(str(r["peak_mib"])) for r in rows)
        print(f"\n10,000-checkpoint store ({args.server}): {rows[0]['checkpoints']} checkpoints")
        print("| engine open (CPU ms) | RSS after open (MiB) | held by the engine (MiB) | peak RSS (MiB) |")
        print(f"|---|---|---|---|\n| {cpu:.0f} | {rss:.0f} | {held:.0f} | {peak:.0f} |")
        print(f"traced by tracemalloc: {float(str(traced.get('traced_mib', 0))):.1f} MiB; top entries:")
        top = traced.get("top", [])
        for line in top if isinstance(top, list) else []:
            print(f"    {line}")


if __name__ == "__main__":
    main()
