"""What a further folder of a multi-root workspace costs the agent: before every tool call the
server asks each other folder's engine for changes nobody announced (``record_foreign``), and
after a command for what the command changed there. Measured on one folder of ``--files`` files:
opening it (store + baseline, once per server start), the check with nothing changed, and with
one file changed (a checkpoint committed). Usage::

    .venv/bin/python -m bench.multiroot --files 1000,10000 --rounds 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from retrace.engine.engine import Engine


@dataclass
class Figures:
    files: int
    open_ms: float
    idle_ms: list[float]
    changed_ms: list[float]


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"line {i}\n" * 20, "utf-8")


def measure(root: Path, store: Path, rounds: int) -> Figures:
    files = sum(1 for _ in root.rglob("*.txt"))
    started = time.perf_counter()
    engine = Engine.open(root, store)
    open_ms = (time.perf_counter() - started) * 1000
    idle: list[float] = []
    changed: list[float] = []
    try:
        for _ in range(rounds):
            t = time.perf_counter()
            assert engine.record_foreign("external", {"session_id": "bench"}) is None
            idle.append((time.perf_counter() - t) * 1000)
        for i in range(rounds):
            (root / "d0" / "f0.txt").write_text(f"changed {i}\n", "utf-8")
            t = time.perf_counter()
            assert engine.record_foreign("tool", {"session_id": "bench"}) is not None
            changed.append((time.perf_counter() - t) * 1000)
    finally:
        engine.close()
    return Figures(files, open_ms, idle, changed)


def render(rows: list[Figures], load: str) -> str:
    lines = [
        f"load average: {load}",
        "",
        "| files | open + baseline | nothing changed (p50 / max) | one file changed (p50 / max) |",
        "|---|---|---|---|",
    ]
    for r in rows:
        idle = f"{statistics.median(r.idle_ms):.2f} / {max(r.idle_ms):.2f} ms"
        changed = f"{statistics.median(r.changed_ms):.2f} / {max(r.changed_ms):.2f} ms"
        lines.append(f"| {r.files} | {r.open_ms:.0f} ms | {idle} | {changed} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rows = []
    for n in (int(x) for x in args.files.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "api"
            make_tree(root, n)
            rows.append(measure(root, Path(tmp) / "store", args.rounds))
    print(render(rows, " ".join(f"{x:.2f}" for x in os.getloadavg())))


if __name__ == "__main__":
    main()
