"""Capture and restore of one tree on the two file-system backends, side by side: ``posix``
(descriptor-relative) and ``portable`` (paths, identity re-checked around every call: what
Windows runs). Each round, for each backend in turn (alternating which goes first, so a load
change hits both): open a new store on a fresh copy of the tree (the baseline capture: every file
read and stored), change every file (a shell-like edit, found by the stat walk: no watcher),
checkpoint it, restore back to the baseline (every file rewritten) and forth again.

``python -m bench.fs_backends [--files 2000] [--rounds 5] [--json]``. Prints the median per step
and backend and the portable/posix ratio, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from retrace.engine import Engine, EngineConfig

BACKENDS = ("posix", "portable")
STEPS = ("baseline", "capture", "restore back", "restore forth")


def _tree(root: Path, files: int) -> list[str]:
    names = [f"pkg{i % 20}/mod{i % 7}/f{i:05d}.py" for i in range(files)]
    for i, rel in enumerate(names):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"line %d\n" % i * 30)
    return names


def one_round(base: Path, names: list[str], backend: str) -> dict[str, float]:
    """Milliseconds per step on ``backend`` (a copy of ``base/tree``, a new store)."""
    os.environ["RETRACE_FS_BACKEND"] = backend
    ws, store = base / f"ws-{backend}", base / f"store-{backend}"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(base / "tree", ws, symlinks=True)
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    eng = Engine.open(ws, store, config=EngineConfig(watcher=False))
    out["baseline"] = (time.perf_counter() - t0) * 1000
    try:
        first = eng.head.id
        for i, rel in enumerate(names):
            (ws / rel).write_bytes(b"changed %d\n" % i * 30)
        t0 = time.perf_counter()
        second = eng.checkpoint("shell", kind="tool", tool="bash").id
        out["capture"] = (time.perf_counter() - t0) * 1000
        for step, target in (("restore back", first), ("restore forth", second)):
            t0 = time.perf_counter()
            result = eng.restore(target)
            out[step] = (time.perf_counter() - t0) * 1000
            assert result.kind == "applied", result
    finally:
        eng.close()
    assert (ws / names[0]).read_bytes() == b"changed 0\n" * 30
    return out


def measure(files: int, rounds: int) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="rt-bench-fs-"))
    saved = os.environ.get("RETRACE_FS_BACKEND")
    try:
        names = _tree(base / "tree", files)
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else -1.0
        runs: dict[str, dict[str, list[float]]] = {b: {s: [] for s in STEPS} for b in BACKENDS}
        for n in range(rounds):
            for backend in BACKENDS if n % 2 == 0 else tuple(reversed(BACKENDS)):
                for step, ms in one_round(base, names, backend).items():
                    runs[backend][step].append(ms)
        load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else -1.0
    finally:
        if saved is None:
            os.environ.pop("RETRACE_FS_BACKEND", None)
        else:
            os.environ["RETRACE_FS_BACKEND"] = saved
        shutil.rmtree(base, ignore_errors=True)
    medians = {b: {s: statistics.median(v) for s, v in steps.items()} for b, steps in runs.items()}
    ratios = {s: medians["portable"][s] / medians["posix"][s] for s in STEPS}
    return {
        "files": files,
        "rounds": rounds,
        "median_ms": medians,
        "ratio_portable_to_posix": ratios,
        "load": [load_before, load_after],
    }


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fs_backends")
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = measure(args.files, args.rounds)
    if args.json:
        print(json.dumps(result))
        return
    medians = result["median_ms"]
    ratios = result["ratio_portable_to_posix"]
    assert isinstance(medians, dict) and isinstance(ratios, dict)
    print(f"{args.files} files, {args.rounds} rounds, load {result['load']}")
    print(f"{'step':<15}{'posix ms':>10}{'portable ms':>13}{'ratio':>8}")
    for step in STEPS:
        print(
            f"{step:<15}{medians['posix'][step]:>10.1f}{medians['portable'][step]:>13.1f}{ratios[step]:>8.2f}"
        )


if __name__ == "__main__":
    main()
