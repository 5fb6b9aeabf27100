"""``python -m bench.stats_cli``: ``retrace stats`` on a store with many checkpoints, this checkout
side by side with another (``--before DIR``: ``DIR/server`` on ``PYTHONPATH``, e.g.
``git archive <commit> server | tar -x -C DIR``).

Not part of the test run. Builds one store (``--checkpoints`` tool checkpoints of one changed
file each, a restore every 50, in ``--sessions`` sessions), then runs ``python -m retrace stats
--json`` fresh ``--rounds`` times per checkout, interleaved (a warm-up round first, not counted),
and prints the median and p90 CPU time (user + system of the child) and the median wall clock,
with the load average. Both checkouts read the same store, and must print the same
``checkpoints``, ``sessions``, ``restores`` and ``blobs`` (else the run stops: a figure changed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from bench.cli_start import timed
from retrace.engine import Engine
from retrace.engine.config import EngineConfig

WORK = Path(__file__).resolve().parent / ".work" / "stats-cli"
SAME = ("checkpoints", "sessions", "restores", "blobs")


def build(ws: Path, store: Path, sessions: int, checkpoints: int) -> None:
    for path in (ws, store):
        shutil.rmtree(path, ignore_errors=True)
    (ws / "src").mkdir(parents=True)
    for i in range(20):
        (ws / "src" / f"m{i}.py").write_text(f"x = {i}\n", "utf-8")
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as engine:
        per = max(1, checkpoints // sessions)
        for s in range(sessions):
            engine.new_session(f"ses_{s}")
            first = None
            for n in range(per):
                (ws / "src" / f"m{n % 20}.py").write_text(f"x = {s}-{n}\n", "utf-8")
                cp = engine.checkpoint(f"c{n}", [f"src/m{n % 20}.py"], kind="tool", tool="write_file")
                first = first or cp.id
                if n % 50 == 49:
                    engine.restore(first, force=True)


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    """(CPU seconds, wall seconds, parsed JSON output) of one ``retrace stats --json``."""
    cpu, wall, out = timed(argv, env, timeout=600)
    parsed: dict[str, object] = json.loads(out)
    return cpu, wall, parsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stats_cli", description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--checkpoints", type=int, default=1000)
    ap.add_argument("--before", type=Path, default=None)
    args = ap.parse_args(argv)
    ws, store = WORK / "ws", WORK / "store"
    build(ws, store, args.sessions, args.checkpoints)
    base = {k: v for k, v in os.environ.items() if k not in ("RETRACE_STORE", "PYTHONPATH")}
    base["RETRACE_NO_HOLDER"] = "1"
    checkouts = {"after": dict(base)}
    if args.before is not None:
        checkouts = {"before": {**base, "PYTHONPATH": str(args.before.resolve() / "server")}, **checkouts}
    cmd = [sys.executable, "-m", "retrace", "stats", "--json", "--workspace", str(ws), "--store", str(store)]
    load = os.getloadavg()
    cpu: dict[str, list[float]] = {k: [] for k in checkouts}
    wall: dict[str, list[float]] = {k: [] for k in checkouts}
    figures: dict[str, dict[str, object]] = {}
    for n in range(args.rounds + 1):
        for name, env in checkouts.items():
            c, w, out = run(cmd, env)
            figures[name] = out
            if n:
                cpu[name].append(c)
                wall[name].append(w)
    if len({json.dumps({k: f[k] for k in SAME}) for f in figures.values()}) != 1:
        raise SystemExit(f"the checkouts disagree: {figures}")
    journals = sum(p.stat().st_size for p in (store / "sessions").rglob("*.jsonl"))
    print(
        f"`python -m bench.stats_cli --rounds {args.rounds} --sessions {args.sessions} "
        f"--checkpoints {args.checkpoints}` · journals {journals / 1e6:.1f} MB · "
        f"load {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end ({os.cpu_count()} CPUs)"
    )
    print("\n| checkout | CPU p50 | CPU p90 | wall p50 |\n|---|---|---|---|")
    for name in checkouts:
        ordered = sorted(cpu[name])
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        print(
            f"| {name} | {statistics.median(cpu[name]) * 1000:.0f} ms | {p90 * 1000:.0f} ms "
            f"| {statistics.median(wall[name]) * 1000:.0f} ms |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
