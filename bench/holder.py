"""``python -m bench.holder``: ``retrace checkpoint`` with no editor, cold and through the headless holder.

A workspace of ``--files`` files (``bench.relay.build``: made once under
``bench/.work/relay-<files>/``) and its store, NO server. Side by side in one run, ``--rounds``
rounds; in each round, with the previous round's holder asked to let go first:

* ``python -c pass`` — the interpreter's own start-up (the unit of every ratio);
* ``retrace checkpoint`` with ``RETRACE_NO_HOLDER=1`` — the cold call as it was (every call opens
  the store);
* the **first cold call** of the round — the same work, then it starts the holder (until the
  command exits);
* the holder's start: from that command's exit until the holder listens;
* ``--warm`` **warm calls** through the holder: ``retrace checkpoint --path F`` (one file changed
  before each call) — the budget with no editor: p95 ≤ 150 ms (and ≤ 60 ms like the editor's);
* ``retrace checkpoint`` through the holder, changes detected by its watcher.

Wall clock p50/p95 per variant and its ratio to ``python -c pass``, the children's CPU time
(``RUSAGE_CHILDREN``: the commands, not the holder, which is no child), the holder's CPU per warm
call (``/proc``, a mean: one call is below its 10 ms tick), and the load average at start and
end: a shared machine, compare ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.relay import RETRACE, WORK, _children_cpu_ms, build, run
from bench.startup import _cpu_ms

COLD_TARGET_MS = 150.0
WARM_TARGET_MS = 60.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Samples:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.holder_cpu: list[float] = []

    def time(self, call: Callable[[], object], holder_pid: int = 0) -> None:
        h0 = _cpu_ms(holder_pid) if holder_pid else 0.0
        c0, t0 = _children_cpu_ms(), time.perf_counter()
        call()
        self.wall.append((time.perf_counter() - t0) * 1000)
        self.cpu.append(_children_cpu_ms() - c0)
        if holder_pid:
            self.holder_cpu.append(_cpu_ms(holder_pid) - h0)

    def row(self, name: str, base: float) -> str:
        p50, p95 = statistics.median(self.wall), percentile(self.wall, 0.95)
        cpu = statistics.median(self.cpu) if self.cpu else 0.0
        held = f"{statistics.fmean(self.holder_cpu):.1f}" if self.holder_cpu else "—"
        return (
            f"| {name} | {len(self.wall)} | {p50:.1f} | {p95:.1f} | {p50 / base:.1f}× | {cpu:.1f} | {held} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--warm", type=int, default=10, help="warm calls per round")
    ap.add_argument("--out", type=Path, default=WORK / "holder.md")
    args = ap.parse_args(argv)
    relay_parent = Path(tempfile.mkdtemp(prefix="rb", dir="/tmp"))  # short: sun_path
    os.environ["RETRACE_RELAY_DIR"] = str(relay_parent / "relay")
    os.environ.pop("RETRACE_NO_HOLDER", None)
    os.environ.pop("RETRACE_STORE", None)
    from retrace.relay import holder, wire

    ws, store = build(args.files, WORK)
    where = ["--workspace", str(ws), "--store", str(store)]
    targets = [f"src/pkg{i % 20}/mod{i}.py" for i in range(50)]
    count = [0]

    def touch() -> str:
        count[0] += 1
        target = targets[count[0] % len(targets)]
        with (ws / target).open("a") as f:
            f.write(f"# change {time.time_ns()}\n")
        return target

    def let_go() -> None:
        for entry in (store / "runtime").glob("holder-*"):
            pid = int(entry.name.removeprefix("holder-"))
            holder.release(store, pid)
            while holder.alive(pid):
                time.sleep(0.01)

    def serving() -> bool:
        return any((store / "runtime").glob("holder-*")) and wire.socket_path(store).exists()

    names = ["python -c pass", "cold, no holder (RETRACE_NO_HOLDER=1)", "first cold call (starts the holder)"]
    names += ["holder start: command exit → listening", "warm: --path F through the holder"]
    names += ["warm: detect through the holder"]
    rows = {name: Samples() for name in names}
    no_holder = {**os.environ, "RETRACE_NO_HOLDER": "1"}
    load0 = os.getloadavg()
    try:
        let_go()
        run([RETRACE, "checkpoint", *where])  # warm the page cache
        let_go()
        for _ in range(args.rounds):
            rows["python -c pass"].time(lambda: run([sys.executable, "-c", "pass"]))
            touch()
            rows["cold, no holder (RETRACE_NO_HOLDER=1)"].time(
                lambda: subprocess.run(
                    [RETRACE, "checkpoint", *where], env=no_holder, check=True, capture_output=True
                )
            )
            touch()
            rows["first cold call (starts the holder)"].time(lambda: run([RETRACE, "checkpoint", *where]))
            t0 = time.perf_counter()
            while not serving():
                time.sleep(0.005)
            rows["holder start: command exit → listening"].wall.append((time.perf_counter() - t0) * 1000)
            pid = int(next((store / "runtime").glob("holder-*")).name.removeprefix("holder-"))
            for _ in range(args.warm):
                argv = [RETRACE, "checkpoint", "--path", touch(), *where]
                rows["warm: --path F through the holder"].time(partial(run, argv), pid)
                touch()
                rows["warm: detect through the holder"].time(
                    lambda: run([RETRACE, "checkpoint", *where]), pid
                )
            let_go()
    finally:
        let_go()
        shutil.rmtree(relay_parent, ignore_errors=True)
    load1 = os.getloadavg()
    report(args, rows, load0, load1)
    return 0


def report(
    args: argparse.Namespace, rows: dict[str, Samples], load0: tuple[float, ...], load1: tuple[float, ...]
) -> None:
    base = statistics.median(rows["python -c pass"].wall)
    lines = [
        f"### `retrace checkpoint` with no editor: cold, then through the headless holder "
        f"({args.files} files, {args.rounds} rounds, {args.warm} warm calls a round)",
        "",
        f"`.venv/bin/python -m bench.holder --files {args.files} --rounds {args.rounds} "
        f"--warm {args.warm}` — "
        f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end; {os.cpu_count()} CPUs.",
        "",
        "| variant | n | wall p50 ms | wall p95 ms | p50 / `python -c pass` | command CPU ms (p50) "
        "| holder CPU ms (mean) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [samples.row(name, base) for name, samples in rows.items()]
    warm = rows["warm: --path F through the holder"].wall
    p95 = percentile(warm, 0.95)
    lines += [
        "",
        f"Warm `--path F` p95 {p95:.1f} ms: ≤ {COLD_TARGET_MS:.0f} ms (no editor) "
        f"**{'met' if p95 <= COLD_TARGET_MS else 'missed'}**, ≤ {WARM_TARGET_MS:.0f} ms (as with the editor) "
        f"**{'met' if p95 <= WARM_TARGET_MS else 'missed'}**.",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
