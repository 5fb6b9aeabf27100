"""``python -m bench.cli_start``: how fast the ``retrace`` command line starts (issue 26 item 3).

Side by side in ONE run, ``--rounds`` rounds, every command a fresh process:

- ``python -c pass`` — the interpreter's own start-up (same venv): the unit of every ratio;
- ``retrace --version`` (target ≤ 5×);
- ``retrace log`` on a small store (a few checkpoints);
- ``retrace stats`` on the same small store (the store's figures: the status bar's pipeline);
- ``retrace checkpoint``, cold, of one changed file in a ``--files`` (2,000) file workspace
  (target ≤ 15×): each round appends a line to another file first.

``--before DIR`` adds the same commands run from another checkout's server (``DIR/server`` on
``PYTHONPATH``; e.g. ``git -C /work/main archive 9d78423 server | tar -x -C /tmp/before-cli``),
each with its own store, interleaved round by round with this checkout's. Commands run as
``python -m retrace`` (the console script skips ``runpy``: slightly faster). Bytecode caches are
written and used (a warm-up round first, not counted), as on a user's machine.

Reported per command: median and p90 of the process's CPU time (user + system, from
``RUSAGE_CHILDREN``: steadier than wall clock on a shared machine) and median wall clock, each with
its ratio to ``python -c pass``; the load average at the start and the end. Workspaces and stores
are built under ``bench/.work/cli-start-<files>/`` (rebuilt each run).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.workspace import generate

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"


@dataclass
class Variant:
    """One checkout's server: ``server`` is put first on ``PYTHONPATH`` (``None``: the installed one)."""

    name: str
    server: Path | None
    big_ws: Path
    big_store: Path
    small_ws: Path
    small_store: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RETRACE_STORE")}
        env["RETRACE_NO_HOLDER"] = "1"  # every checkpoint cold: the holder's figures are bench.holder's
        if self.server is not None:
            env["PYTHONPATH"] = str(self.server)
        else:
            env.pop("PYTHONPATH", None)
        return env


@dataclass
class Samples:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


def timed(argv: list[str], env: dict[str, str], timeout: float = 300) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one process; a failing command stops the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=timeout)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def _retrace(variant: Variant, *args: str) -> list[str]:
    return [sys.executable, "-m", "retrace", *args]


def build(variant: Variant, files: int, small_files: int) -> None:
    """The two workspaces (same seed for every variant) and their stores, made by the variant."""
    for path in (variant.big_ws, variant.big_store, variant.small_ws, variant.small_store):
        shutil.rmtree(path, ignore_errors=True)
    generate(variant.big_ws, files, seed=26)
    generate(variant.small_ws, small_files, seed=27)
    env = variant.env()
    for ws, store in ((variant.big_ws, variant.big_store), (variant.small_ws, variant.small_store)):
        timed(_retrace(variant, "init", "--workspace", str(ws), "--store", str(store)), env)
    for i in range(5):  # the small store's log lists a few checkpoints
        _touch(variant.small_ws, i)
        args = ("checkpoint", "--label", f"c{i}", "--workspace", str(variant.small_ws))
        timed(_retrace(variant, *args, "--store", str(variant.small_store)), env)


def _tracked(ws: Path) -> list[Path]:
    return sorted(p for p in ws.rglob("*.py") if "node_modules" not in p.parts and "build" not in p.parts)


def _touch(ws: Path, n: int) -> None:
    """One changed file: round ``n`` appends a line to the n-th tracked source file."""
    files = _tracked(ws)
    with files[n % len(files)].open("a", encoding="utf-8") as f:
        f.write(f"# cli_start round {n}\n")


def commands(variant: Variant) -> dict[str, list[str]]:
    return {
        "retrace --version": _retrace(variant, "--version"),
        "retrace log (small store)": _retrace(
            variant, "log", "--workspace", str(variant.small_ws), "--store", str(variant.small_store)
        ),
        "retrace stats (small store)": _retrace(
            variant, "stats", "--workspace", str(variant.small_ws), "--store", str(variant.small_store)
        ),
        "retrace checkpoint (1 changed file)": _retrace(
            variant, "checkpoint", "--workspace", str(variant.big_ws), "--store", str(variant.big_store)
        ),
    }


def measure(variants: list[Variant], rounds: int) -> tuple[Samples, dict[tuple[str, str], Samples]]:
    """Interleaved rounds: the interpreter, then every command of every variant."""
    base = Samples()
    results: dict[tuple[str, str], Samples] = {}
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for n in range(rounds + 1):  # round 0 warms the bytecode caches and is not counted
        cpu, wall, _ = timed([sys.executable, "-c", "pass"], plain)
        if n:
            base.cpu.append(cpu)
            base.wall.append(wall)
        for variant in variants:
            for label, argv in commands(variant).items():
                if label.startswith("retrace checkpoint"):
                    _touch(variant.big_ws, 1000 + n)
                cpu, wall, out = timed(argv, variant.env())
                if label.startswith("retrace checkpoint") and not out.strip():
                    raise SystemExit("retrace checkpoint printed no checkpoint id")
                if n:
                    samples = results.setdefault((variant.name, label), Samples())
                    samples.cpu.append(cpu)
                    samples.wall.append(wall)
    return base, results


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def render(
    base: Samples, results: dict[tuple[str, str], Samples], *, rounds: int, files: int, load: str
) -> str:
    base_cpu = statistics.median(base.cpu)
    base_wall = statistics.median(base.wall)
    lines = [
        f"`python -m bench.cli_start --rounds {rounds} --files {files}` · {load}",
        "",
        "| Command | Checkout | CPU p50 | CPU p90 | × python (CPU) | wall p50 | × python (wall) |",
        "|---|---|---|---|---|---|---|",
        f"| `python -c pass` | — | {base_cpu * 1000:.1f} ms | {_p90(base.cpu) * 1000:.1f} ms | 1.0× "
        f"| {base_wall * 1000:.1f} ms | 1.0× |",
    ]
    for (variant, label), s in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cpu, wall = statistics.median(s.cpu), statistics.median(s.wall)
        lines.append(
            f"| `{label}` | {variant} | {cpu * 1000:.1f} ms | {_p90(s.cpu) * 1000:.1f} ms "
            f"| {cpu / base_cpu:.1f}× | {wall * 1000:.1f} ms | {wall / base_wall:.1f}× |"
        )
    return "\n".join(lines) + "\n"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cli_start", description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--files", type=int, default=2000, help="files in the checkpoint workspace")
    ap.add_argument("--small-files", type=int, default=50, help="files in the log workspace")
    ap.add_argument("--before", type=Path, default=None, help="another checkout (its server/ is used)")
    ap.add_argument("--work", type=Path, default=None, help="where workspaces and stores are built")
    args = ap.parse_args(argv)
    work = args.work or WORK / f"cli-start-{args.files}"
    checkouts: list[tuple[str, Path | None]] = [("after", None)]
    if args.before is not None:
        checkouts.insert(0, ("before", args.before.resolve() / "server"))
    variants = [
        Variant(name, server, *(work / name / part for part in ("ws", "store", "small-ws", "small-store")))
        for name, server in checkouts
    ]
    for variant in variants:
        build(variant, args.files, args.small_files)
    load_start = _load()
    base, results = measure(variants, args.rounds)
    load = f"{load_start} at the start, {_load()} at the end"
    print(render(base, results, rounds=args.rounds, files=args.files, load=load), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
