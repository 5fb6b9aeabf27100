"""``python -m bench.ids_replay``: what local origins cost (issue 25, item 5).

Makes a store of ``--checkpoints`` one-file edit checkpoints over ``--files`` files, then times
the commit path (p50 per checkpoint, ``changed_paths`` given) and re-opens of the store
(read-only: the replay alone; writer: replay + head + catch-up), median of ``--rounds``. Run it
with the code before and after a change (``PYTHONPATH=<old checkout>/server``) to compare:
every checkpoint line now carries a keyed hash that each open verifies.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from retrace.engine import Engine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--checkpoints", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws, store = Path(tmp) / "ws", Path(tmp) / "store"
        ws.mkdir()
        for i in range(args.files):
            (ws / f"f{i}.txt").write_text(f"file {i}\n")
        commit_ms: list[float] = []
        with Engine.open(ws, store) as eng:
            for n in range(args.checkpoints):
                rel = f"f{n % args.files}.txt"
                (ws / rel).write_text(f"file {n % args.files} edit {n}\n")
                t0 = time.perf_counter()
                eng.checkpoint(f"edit {n}", changed_paths=[rel])
                commit_ms.append((time.perf_counter() - t0) * 1000)
        ro: list[float] = []
        rw: list[float] = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            Engine.open(ws, store, readonly=True).close()
            ro.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            Engine.open(ws, store).close()
            rw.append((time.perf_counter() - t0) * 1000)
        print(
            f"checkpoints={args.checkpoints} files={args.files} "
            f"commit p50={statistics.median(commit_ms):.2f} ms "
            f"open(read-only) median={statistics.median(ro):.0f} ms "
            f"open(writer) median={statistics.median(rw):.0f} ms"
        )


if __name__ == "__main__":
    main()
