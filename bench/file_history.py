"""Per-file history at scale: ``retrace/file/history``'s query on a long session.

``python -m bench.file_history [--checkpoints 10000] [--files 2000] [--repeat 20]``

Builds a session of single-file edit checkpoints over a workspace of ``--files`` files (a real
engine, a real store in a temporary folder), then times one page (100 versions) of the history of
a hot file (changed by every 10th checkpoint), a cold file (changed once, early) and a file never
changed (the scan reaches the baseline), next to two references: listing the whole timeline
(``Engine.timeline``: the least a "look at every checkpoint" query does) and rebuilding one full
manifest (what an O(files × checkpoints) design pays per checkpoint). The first query after
opening also builds the path index; it is reported on its own line. Prints p50/p95 in ms and
ratios; nothing is asserted (timings are noisy: tests check the behaviour, this reports speed).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from retrace.app.file_history import file_history
from retrace.engine import Engine, EngineConfig
from retrace.protocol.file_history import FileHistoryParams


def _build(ws: Path, store: Path, files: int, checkpoints: int) -> Engine:
    for n in range(files):
        (ws / f"d{n % 50}").mkdir(parents=True, exist_ok=True)
        (ws / f"d{n % 50}" / f"f{n}.txt").write_text(f"file {n}\n")
    engine = Engine.open(ws, store, config=EngineConfig())
    for i in range(checkpoints):
        # every 10th checkpoint edits the hot file; f1 is edited once, early; the rest spread out
        n = 0 if i % 10 == 0 else 1 if i == 5 else 2 + (i * 7919) % (files - 2)
        rel = f"d{n % 50}/f{n}.txt"
        (ws / rel).write_text(f"file {n} edit {i}\n")
        engine.checkpoint(f"edit {i}", [rel], kind="tool", tool="edit_file")
    return engine


def _times(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="retrace-fh-") as tmp:
        start = time.perf_counter()
        engine = _build(Path(tmp) / "ws", Path(tmp) / "store", args.files, args.checkpoints)
        took = time.perf_counter() - start
        print(f"built {args.checkpoints} checkpoints over {args.files} files in {took:.1f} s")
        try:
            order = engine.history.order
            # a different checkpoint each time, so no cached snapshot answers for it
            sampled = iter(order[len(order) // 4 :: max(1, len(order) // (2 * args.repeat))])

            def page(path: str) -> Callable[[], object]:
                return lambda: file_history(engine, FileHistoryParams(path=path, limit=100))

            rows = {
                "history, hot file (1 in 10), first page of 100": page("d0/f0.txt"),
                "history, cold file (changed once, early)": page("d1/f1.txt"),
                "history, file never changed (reaches the baseline)": page("d3/f3.txt"),
                "reference: Engine.timeline() (every checkpoint)": engine.timeline,
                "reference: one full manifest rebuilt (mid-session)": lambda: engine.manifest(next(sampled)),
            }
            start_ns = time.perf_counter_ns()
            file_history(engine, FileHistoryParams(path="d1/f1.txt", limit=100))
            first = (time.perf_counter_ns() - start_ns) / 1e6
            print(f"first query after open (builds the path index): {first:.2f} ms")
            print(f"{'query':<54} {'p50 ms':>8} {'p95 ms':>8}")
            results = {}
            for name, fn in rows.items():
                results[name] = _times(fn, args.repeat)
                print(f"{name:<54} {results[name][0]:>8.2f} {results[name][1]:>8.2f}")
            timeline_p50 = results["reference: Engine.timeline() (every checkpoint)"][0]
            manifest_p50 = results["reference: one full manifest rebuilt (mid-session)"][0]
            cold = results["history, cold file (changed once, early)"][0]
            print(f"cold-file history / timeline listing: {cold / timeline_p50:.2f}×")
            print(
                f"cold-file history / rebuilding every manifest (estimated {args.checkpoints} × one): "
                f"{cold / (manifest_p50 * args.checkpoints):.5f}×"
            )
        finally:
            engine.close()


if __name__ == "__main__":
    main()
