"""``python -m bench.replay_quick``: a quick real-code replay (not part of the test run).

Successive source distributions of one PyPI package (downloaded with ``pip download`` into
``--cache``, or given as ``--sdists``) are replayed over one workspace: each version is mirrored
onto the previous one (only files whose bytes differ are written, removed files are deleted:
real multi-file changes, renames and deletions), untimed, and then each strategy's checkpoint
is timed as a shell call (``changed_paths=None``: the strategy must detect). Reports p50/p95/max
per strategy and the ratios to shadow git and to the floor, and checks that restoring the first
version is byte-exact. Small on purpose: the full long-session benchmark lives elsewhere.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.floor import Floor
from bench.retrace_engine import RetraceStrategy
from bench.shadow_git import ShadowGit
from bench.strategy import Strategy
from bench.trace import Step
from bench.tree import IgnoreRules, tree_digest

STRATEGIES: dict[str, Callable[[Path, Path], Strategy]] = {
    "retrace": RetraceStrategy,
    "shadow-git": ShadowGit,
    "floor": Floor,
}
DEFAULT_VERSIONS = (
    "13.0.0,13.1.0,13.2.0,13.3.0,13.3.1,13.3.2,13.4.0,13.4.1,13.4.2,13.5.0,13.5.1,13.5.2,13.6.0"
)


def download(package: str, versions: list[str], cache: Path) -> list[Path]:
    cache.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for v in versions:
        found = sorted(cache.glob(f"{package}-{v}.tar.gz"))
        if not found:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
            subprocess.run([*cmd, "-d", str(cache), f"{package}=={v}"], check=True)
            found = sorted(cache.glob(f"{package}-{v}.tar.gz"))
        out.append(found[0])
    return out


def unpack(sdist: Path, dest: Path) -> dict[str, bytes]:
    """path (without the top folder) → bytes of every regular file in the sdist."""
    files: dict[str, bytes] = {}
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            if m.isfile() and "/" in m.name:
                f = tar.extractfile(m)
                if f is not None:
                    files[m.name.split("/", 1)[1]] = f.read()
    return files


def mirror(root: Path, files: dict[str, bytes]) -> list[str]:
    """Make ``root`` hold exactly ``files``; returns the paths that changed."""
    changed: list[str] = []
    for p in sorted(root.rglob("*"), reverse=True):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel not in files:
            p.unlink()
            changed.append(rel)
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    for rel, data in files.items():
        p = root / rel
        if p.is_file() and p.read_bytes() == data:
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        changed.append(rel)
    return changed


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else math.nan


def run(name: str, trees: list[dict[str, bytes]], work: Path) -> dict[str, object]:
    ws, store = work / f"{name}-ws", work / f"{name}-store"
    for d in (ws, store):
        shutil.rmtree(d, ignore_errors=True)
    ws.mkdir(parents=True)
    store.mkdir(parents=True)
    mirror(ws, trees[0])
    os.sync()
    strategy: Strategy = STRATEGIES[name](ws, store)
    ids = [strategy.open()]
    rules = IgnoreRules.for_workspace(ws)
    first = tree_digest(ws, rules)
    ms: list[float] = []
    cpu: list[float] = []
    changed: list[int] = []
    for i, tree in enumerate(trees[1:], 1):
        paths = mirror(ws, tree)
        changed.append(len(paths))
        os.sync()  # the previous version's bytes are on disk: the checkpoint pays for its own only
        # The floor is told what changed (hash + store those bytes + one durable append); the
        # others detect it themselves, as after a shell command.
        step = Step(i, "shell", f"version {i}", (), tuple(paths) if name == "floor" else None)
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        ids.append(strategy.checkpoint(step))
        ms.append((time.perf_counter_ns() - t0) / 1e6)
        cpu.append((time.process_time_ns() - c0) / 1e6)
    strategy.restore(ids[0])
    exact = tree_digest(ws, rules) == first
    strategy.close()
    return {"ms": ms, "cpu": cpu, "changed": changed, "exact": exact}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.replay_quick", description=__doc__.split("\n\n")[0])
    p.add_argument("--package", default="rich")
    p.add_argument("--versions", default=DEFAULT_VERSIONS, help="comma-separated, oldest first")
    p.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / ".work" / "sdists")
    p.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / ".work" / "replay")
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    args = p.parse_args(argv)
    sdists = download(args.package, args.versions.split(","), args.cache)
    trees = [unpack(s, args.work) for s in sdists]
    results = {name: run(name, trees, args.work) for name in args.strategies.split(",")}
    any_r = next(iter(results.values()))
    counts = any_r["changed"]
    assert isinstance(counts, list)
    print(f"{args.package}: {len(trees)} versions, {len(trees[0])} files, changed per version {counts}")
    print("| strategy | p50 | p95 | max | CPU p50 | CPU p95 | restore to first byte-exact |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        ms, cpu = r["ms"], r["cpu"]
        assert isinstance(ms, list) and isinstance(cpu, list)
        print(
            f"| {name} | {pct(ms, 50):.2f} ms | {pct(ms, 95):.2f} ms | {max(ms):.2f} ms "
            f"| {pct(cpu, 50):.2f} ms | {pct(cpu, 95):.2f} ms | {r['exact']} |"
        )
    if "retrace" in results:
        for key in ("ms", "cpu"):
            rt = results["retrace"][key]
            assert isinstance(rt, list)
            for other in ("shadow-git", "floor"):
                if other in results:
                    o = results[other][key]
                    assert isinstance(o, list)
                    print(
                        f"retrace / {other} ({'wall' if key == 'ms' else 'CPU, this process'}): "
                        f"p50 {pct(rt, 50) / pct(o, 50):.2f}x, p95 {pct(rt, 95) / pct(o, 95):.2f}x"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
