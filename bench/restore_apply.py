"""The disk restore's apply, alone: N files rewritten, a tenth deleted and created, restored back
and forth. Prints the median and p90 per restore in ms (JSON with ``--json``).

``python -m bench.restore_apply [--files 2000] [--rounds 12] [--store DIR]``: ``--store`` on
another file system (e.g. a tmpfs) measures the cross-device layout, where what the apply moves
away goes to the workspace's own trash instead of the store's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from retrace.engine import Engine, EngineConfig


def _write(ws: Path, rel: str, data: bytes) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def measure(files: int, rounds: int, store_parent: Path | None) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="rt-bench-restore-"))
    store_dir = Path(tempfile.mkdtemp(dir=store_parent)) if store_parent else base / "store"
    ws = base / "ws"
    try:
        names = [f"d{i % 40}/f{i:05d}.py" for i in range(files)]
        for i, rel in enumerate(names):
            _write(ws, rel, b"v1 %d\n" % i * 40)
        eng = Engine.open(ws, store_dir / "s", config=EngineConfig(watcher=False))
        eng.checkpoint("A")
        a = eng.head.id
        for i, rel in enumerate(names):
            if i % 10 == 0:
                (ws / rel).unlink()
                _write(ws, f"new/{rel}", b"new %d\n" % i * 40)
            else:
                _write(ws, rel, b"v2 %d\n" % i * 40)
        eng.checkpoint("B")
        b = eng.head.id
        times: list[float] = []
        for n in range(rounds):
            t0 = time.perf_counter()
            out = eng.restore(a if n % 2 == 0 else b)
            times.append((time.perf_counter() - t0) * 1000)
            assert out.kind == "applied", out
        eng.close()
        times.sort()
        return {"median_ms": statistics.median(times), "p90_ms": times[int(len(times) * 0.9) - 1]}
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if store_parent:
            shutil.rmtree(store_dir, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.restore_apply")
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--store", type=Path, default=None, help="parent directory of the store")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = measure(args.files, args.rounds, args.store)
    text = f"median {result['median_ms']:.1f} ms, p90 {result['p90_ms']:.1f} ms"
    print(json.dumps(result) if args.json else text)


if __name__ == "__main__":
    main()
