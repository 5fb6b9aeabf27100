"""``python -m bench.replay``: successive released versions of real projects, one tool call each.

For every project (``--projects rich:40,django:30``: package and number of final releases, the
last ones in version order, fetched by :mod:`bench.versions` into ``bench/.work/replay/``), the
first version is the workspace's baseline and every following version is made to be the
workspace (written over the previous one, deletions applied, under a constant folder name) as
ONE tool call. Two variants: ``shell`` (the call reports nothing: ``changed_paths=None``) and
``edit`` (it reports exactly the changed paths). Each strategy and variant runs in its own child
process (shadow git once: it ignores what a call reports): checkpoint latency per version,
restore to the first and to the middle version from the last (checked byte-exact, then back
to the last), store size, peak RSS. The Markdown report is :mod:`bench.replay_report`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.replay_report import render
from bench.report import fsync_probe, ms_since, summary
from bench.run import STRATEGIES
from bench.strategy import Strategy
from bench.trace import Step
from bench.tree import IgnoreRules, du_bytes, tree_digest
from bench.versions import fetch, sync, versions

BENCH_DIR = Path(__file__).resolve().parent
RUNS = (
    ("retrace", "shell"),
    ("retrace", "edit"),
    ("floor", "shell"),
    ("floor", "edit"),
    ("shadow-git", "shell"),
)
DEFAULT_PROJECTS = "rich:40,django:30"
Result = dict[str, Any]


def _make(name: str, ws: Path, store: Path) -> Strategy:
    return STRATEGIES[name](ws, store)


def _restore(s: Strategy, cp_id: str, ws: Path, rules: IgnoreRules, digest: str) -> Result:
    t0 = time.perf_counter_ns()
    try:
        s.restore(cp_id)
    except Exception as exc:
        return {"ms": math.nan, "exact": False, "error": f"{type(exc).__name__}: {exc}"}
    ms = ms_since(t0)
    return {"ms": ms, "exact": tree_digest(ws, rules) == digest, "error": None}


def measure(
    name: str,
    variant: str,
    project: str,
    cache: Path,
    work: Path,
    count: int = 0,
    keep: bool = False,
    profile: Path | None = None,
) -> Result:
    """Replay the last ``count`` (0: all) cached versions of ``project`` through one strategy.
    ``profile``: write the cProfile statistics of the checkpoint calls (only) to this file."""
    vs = versions(cache, project)[-count:]
    root, store = work / f"{project}-{name}-{variant}-ws", work / f"{project}-{name}-{variant}-store"
    for d in (root, store):
        shutil.rmtree(d, ignore_errors=True)
    store.mkdir(parents=True)
    ws = root / project  # a constant folder name: a new version is not a rename of every file
    ws.mkdir(parents=True)
    sync(ws, cache / project / "v" / vs[0])
    rules = IgnoreRules.for_workspace(root)
    os.sync()
    mid = len(vs) // 2
    digests = {0: tree_digest(root, rules)}
    s = _make(name, root, store)
    t0 = time.perf_counter_ns()
    ids = [s.open()]
    cold_ms = ms_since(t0)
    ms: list[float] = []
    changed: list[int] = []
    prof = cProfile.Profile() if profile is not None else None
    for i, version in enumerate(vs[1:], start=1):
        paths = [f"{project}/{p}" for p in sync(ws, cache / project / "v" / version)]
        label = f"{project} {vs[i - 1]} → {version} ({len(paths)} files)"
        tool = "run_command" if variant == "shell" else "edit_file"
        step = Step(i, tool, label, (), None if variant == "shell" else tuple(paths))
        t0 = time.perf_counter_ns()
        if prof is not None:
            prof.enable()
        ids.append(s.checkpoint(step))
        if prof is not None:
            prof.disable()
        ms.append(ms_since(t0))
        changed.append(len(paths))
        if i in (mid, len(vs) - 1):
            digests[i] = tree_digest(root, rules)
    if prof is not None and profile is not None:
        prof.dump_stats(profile)
    last = len(vs) - 1
    restores = {}
    for label, index in (("first", 0), ("middle", mid)):
        restores[label] = _restore(s, ids[index], root, rules, digests[index])
        back = _restore(s, ids[last], root, rules, digests[last])
        restores[label]["back_exact"] = back["exact"]
    s.close()
    r: Result = {
        "strategy": name,
        "variant": variant,
        "project": project,
        "versions": [vs[0], vs[-1], len(vs)],
        "files": sum(1 for _ in root.rglob("*") if _.is_file()),
        "cold_ms": cold_ms,
        "checkpoint": summary(ms),
        "checkpoint_ms": ms,
        "changed": changed,
        "restores": restores,
        "store_bytes": du_bytes(store),
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "children_maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        "digests": {str(k): v for k, v in sorted(digests.items())},
    }
    r["exact"] = all(x["exact"] and x["back_exact"] for x in restores.values())
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)
    return r


def run_child(
    name: str, variant: str, project: tuple[str, int], cache: Path, work: Path, keep: bool
) -> Result:
    """:func:`measure` in a fresh interpreter, so the peak RSS is this run's alone."""
    package, count = project
    result_file = work / f"replay-{package}-{name}-{variant}.json"
    cmd = [sys.executable, "-m", "bench.replay", "--child", name, "--variant", variant]
    cmd += ["--project", package, "--count", str(count)]
    cmd += ["--cache", str(cache), "--work", str(work), "--result", str(result_file)] + ["--keep"] * keep
    proc = subprocess.run(cmd, cwd=BENCH_DIR.parent, check=False)
    if proc.returncode != 0 or not result_file.exists():
        return {"strategy": name, "variant": variant, "project": package, "crashed": proc.returncode}
    result: Result = json.loads(result_file.read_text())
    result_file.unlink()
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    p.add_argument("--projects", default=DEFAULT_PROJECTS, help="package:count,… (PyPI sdists)")
    p.add_argument("--large", default="django", help="the project the large-project targets apply to")
    p.add_argument("--offline", action="store_true", help="use only the versions already in --cache")
    p.add_argument("--cache", type=Path, default=BENCH_DIR / ".work" / "replay" / "cache")
    p.add_argument("--work", type=Path, default=BENCH_DIR / ".work" / "replay" / "run")
    p.add_argument("--out", type=Path, default=BENCH_DIR / ".work" / "REPLAY.md")
    p.add_argument("--keep", action="store_true", help="keep workspaces and stores")
    p.add_argument(
        "--profile",
        type=Path,
        help="profile the checkpoint calls of ONE --child run and print the top entries",
    )
    p.add_argument("--child", choices=("retrace", "floor", "shadow-git"), help=argparse.SUPPRESS)
    p.add_argument("--variant", choices=("shell", "edit"), help=argparse.SUPPRESS)
    p.add_argument("--project", help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cache, work = args.cache.resolve(), args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.child:
        result = measure(
            args.child, args.variant, args.project, cache, work, args.count, args.keep, args.profile
        )
        if args.result is not None:
            args.result.write_text(json.dumps(result))
        if args.profile is not None:
            print(json.dumps(result["checkpoint"]))
            pstats.Stats(str(args.profile)).sort_stats("cumulative").print_stats(40)
        return 0
    projects = [(p.split(":")[0], int(p.split(":")[1]) if ":" in p else 30) for p in args.projects.split(",")]
    for package, count in projects:
        if not args.offline:
            fetch(package, count, cache)
        if len(versions(cache, package)[-count:]) < 2:
            print(f"bench.replay: fewer than 2 versions of {package} in {cache}", file=sys.stderr)
            return 2
    started, load_start = datetime.now(UTC), os.getloadavg()[0]
    fsync = fsync_probe(work)
    results: list[Result] = []
    for project in projects:
        for name, variant in RUNS:
            t0 = time.perf_counter()
            print(f"[replay] {project[0]}: {name} ({variant}) …", file=sys.stderr, flush=True)
            results.append(run_child(name, variant, project, cache, work, args.keep))
            print(f"[replay]   done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    command = ".venv/bin/python -m bench.replay " + " ".join(argv if argv is not None else sys.argv[1:])
    load = f"{load_start:.1f} / {os.getloadavg()[0]:.1f}"
    report = render(results, args.large, command.strip(), started, load, fsync)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    (work / "replay-results.json").write_text(json.dumps(results, indent=1))
    print(report)
    return 1 if any("crashed" in r or not r["exact"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
