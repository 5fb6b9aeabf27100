"""``python -m bench.long_session``: one 10,000-call session on a 50k-file workspace.

Every strategy (retrace, shadow git, the floor) runs in its own child process on a freshly
generated workspace (same seed, same bytes) and replays the same plan: the ``bench.trace`` tool
calls (mostly single-file edits, 15 % shell calls) with a restore cycle every ``--restore-every``
calls. A cycle restores to a target chosen in turn (1 back, 50 back, the first checkpoint, a
random older one), takes one edit checkpoint there (a fork: work continues after a restore),
then restores to the main line's tip (the trace continues from it, so it stays valid). Shadow
git runs only the first ``--git-calls`` calls of the plan (≈ 230 ms a call at 50k files).

Retrace alone also gets ``--old-sessions`` older sessions in its store before the session
starts (small real sessions made through the engine API, cached under ``bench/.work/long/``),
a warm re-open at the end, and the agent path (:mod:`bench.agent_path`): ``--agent-calls`` edit
tool calls through the real agent loop against the offline fake model, each timed from the
tool's result to its ``checkpointCreated`` event. Peak RSS is the child process's.
The Markdown report is :mod:`bench.long_report`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.agent_path import measure_agent_path
from bench.long_report import render
from bench.report import fsync_probe, ms_since, rss_now_kb, summary
from bench.retrace_engine import RetraceStrategy
from bench.run import STRATEGIES
from bench.strategy import Strategy
from bench.trace import Step, WriteFile, apply_step, make_trace
from bench.tree import IgnoreRules, du_bytes, tree_digest
from bench.workspace import generate
from retrace.engine import Engine

BENCH_DIR = Path(__file__).resolve().parent
TARGETS = ("1 back", "50 back", "first", "random older")
BACK_TO_TIP = "back to tip"
OLD_DIR = "old-sessions"
Result = dict[str, Any]


@dataclass(frozen=True)
class Cycle:
    """After call ``at``: restore to checkpoint ``target`` (``label``), fork, restore to the tip."""

    at: int
    label: str
    target: int


def plan(trace: list[Step], every: int, seed: int) -> Iterator[Step | Cycle]:
    rng = random.Random(seed)
    for step in trace:
        yield step
        if every and step.index % every == 0:
            label = TARGETS[(step.index // every - 1) % len(TARGETS)]
            i = step.index
            target = {"1 back": i - 1, "50 back": max(0, i - 50), "first": 0}.get(label)
            yield Cycle(i, label, rng.randrange(0, max(1, i - 1)) if target is None else target)


def fork_step(cycle: Cycle) -> Step:
    path = f"forks/fork_{cycle.at}.md"
    data = f"# work continued after restoring to checkpoint {cycle.target}\n".encode()
    return Step(cycle.at, "write_file", f"create {path}", (WriteFile(path, data),), (path,))


# --------------------------------------------------------------------------- older sessions


def _old_file(k: int, j: int) -> tuple[str, bytes]:
    return f"{OLD_DIR}/session_{k:03d}.md", f"# older session {k}\n\nnote {j}\n".encode()


def add_old_sessions(ws: Path, store: Path, count: int, cache: Path) -> float:
    """Put ``count`` small sessions (3 checkpoints each) in ``store``; returns ms spent making them.

    The first run makes them through the engine API and keeps a copy of the store in ``cache``;
    later runs copy that store and rewrite the sessions' files (same bytes) into ``ws``."""
    t0 = time.perf_counter_ns()
    if count and not (cache / "done").exists():
        shutil.rmtree(cache, ignore_errors=True)
        engine = Engine.open(ws, store)
        try:
            for k in range(count):
                engine.new_session(f"older-{k:03d}")
                for j in range(3):
                    rel, data = _old_file(k, j)
                    (ws / rel).parent.mkdir(exist_ok=True)
                    (ws / rel).write_bytes(data)
                    engine.checkpoint(f"write {rel}", [rel], kind="tool", tool="write_file")
        finally:
            engine.close()
        shutil.copytree(store, cache / "store")
        (cache / "done").write_text("ok\n")
    elif count:
        shutil.rmtree(store)
        shutil.copytree(cache / "store", store)
        write_old_files(ws, count)
    return ms_since(t0)


def write_old_files(ws: Path, count: int) -> None:
    """The older sessions' files as they ended (every strategy's workspace holds them)."""
    for k in range(count):
        rel, data = _old_file(k, 2)
        (ws / rel).parent.mkdir(exist_ok=True)
        (ws / rel).write_bytes(data)


# --------------------------------------------------------------------------- one strategy


def _make(name: str, ws: Path, store: Path) -> Strategy:
    return STRATEGIES[name](ws, store)


def _run_plan(s: Strategy, ws: Path, steps: list[Step | Cycle], verify: bool, r: Result) -> list[str]:
    ids = [s.open()]
    errors: list[str] = []
    rules = IgnoreRules.for_workspace(ws)
    for item in steps:
        if isinstance(item, Step):
            apply_step(ws, item)
            t0 = time.perf_counter_ns()
            ids.append(s.checkpoint(item))
            r[item.kind].append(ms_since(t0))
            continue
        tip = tree_digest(ws, rules) if verify else ""
        t0 = time.perf_counter_ns()
        s.restore(ids[item.target])
        r["restores"].setdefault(item.label, []).append(ms_since(t0))
        fork = fork_step(item)
        apply_step(ws, fork)
        t0 = time.perf_counter_ns()
        s.checkpoint(fork)
        r["fork"].append(ms_since(t0))
        t0 = time.perf_counter_ns()
        s.restore(ids[item.at])
        r["restores"].setdefault(BACK_TO_TIP, []).append(ms_since(t0))
        if verify and tree_digest(ws, rules) != tip:
            errors.append(f"restore to the tip after call {item.at} is not byte-exact")
    if verify:
        r["final_digest"] = tree_digest(ws, rules)
    return errors


def measure(name: str, args: argparse.Namespace, work: Path) -> Result:
    ws, store = work / f"{name}-ws", work / f"{name}-store"
    for d in (ws, store):
        shutil.rmtree(d, ignore_errors=True)
    store.mkdir(parents=True)
    t0 = time.perf_counter_ns()
    workspace = generate(ws, args.files, args.seed)
    trace = make_trace(workspace, args.calls, args.seed)
    steps = list(plan(trace, args.restore_every, args.seed))
    limit = args.git_calls if name == "shadow-git" else args.calls
    steps = [i for i in steps if (i.index if isinstance(i, Step) else i.at) <= limit]
    r: Result = {"strategy": name, "files": workspace.tracked_files, "calls": min(limit, args.calls)}
    r |= {"generate_ms": ms_since(t0), "edit": [], "shell": [], "fork": [], "restores": {}}
    if name == "retrace":
        cache = work.parent / f"old-{args.files}-{args.seed}-{args.old_sessions}"
        r["old_sessions"] = args.old_sessions
        r["old_sessions_ms"] = add_old_sessions(ws, store, args.old_sessions, cache)
    else:
        write_old_files(ws, args.old_sessions)
    os.sync()
    r["rss_start_kb"] = rss_now_kb()
    s = _make(name, ws, store)
    r["errors"] = _run_plan(s, ws, steps, args.verify, r)
    s.close()
    t0 = time.perf_counter_ns()
    s.open()
    r["warm_open_ms"] = ms_since(t0)
    r["maxrss_engine_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if name == "retrace" and args.agent_calls and isinstance(s, RetraceStrategy) and s.engine is not None:
        agent = measure_agent_path(s.engine, args.agent_calls, args.seed)
        r["agent"] = summary(agent["samples"]) | {k: agent[k] for k in ("wall_ms", "requested", "startup_ms")}
        r["errors"] += agent["errors"]
    s.close()
    r["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r["children_maxrss_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r["store_bytes"] = du_bytes(s.storage_path())
    r["detect_modes"] = dict(getattr(s, "detect_modes", {}))
    for key in ("edit", "shell", "fork"):
        r[key] = summary(r[key])
    r["restores"] = {label: summary(v) for label, v in r["restores"].items()}
    if not args.keep:
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)
    return r


def run_child(name: str, args: argparse.Namespace, work: Path) -> Result:
    """:func:`measure` in a fresh interpreter, so the peak RSS is this strategy's alone."""
    result_file = work / f"long-{name}.json"
    cmd = [sys.executable, "-m", "bench.long_session", "--child", name, "--result", str(result_file)]
    cmd += [f"--{k.replace('_', '-')}={v}" for k, v in _knobs(args).items()]
    cmd += ["--verify"] * args.verify + ["--keep"] * args.keep + [f"--work={work}"]
    proc = subprocess.run(cmd, cwd=BENCH_DIR.parent, check=False)
    if proc.returncode != 0 or not result_file.exists():
        return {"strategy": name, "crashed": proc.returncode}
    result: Result = json.loads(result_file.read_text())
    result_file.unlink()
    return result


def _knobs(args: argparse.Namespace) -> dict[str, int]:
    keys = ("files", "calls", "old_sessions", "git_calls", "agent_calls", "restore_every", "seed")
    return {k: getattr(args, k) for k in keys}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.long_session", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=50_000, help="tracked files in the workspace")
    p.add_argument("--calls", type=int, default=10_000, help="tool calls in the session")
    p.add_argument("--old-sessions", type=int, default=300, help="older sessions in Retrace's store")
    p.add_argument("--git-calls", type=int, default=1_000, help="shadow git runs only this prefix")
    p.add_argument("--agent-calls", type=int, default=200, help="edit calls through the agent path")
    p.add_argument("--restore-every", type=int, default=500, help="calls between restore cycles")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--verify", action="store_true", help="check every return to the tip byte-exact")
    p.add_argument(
        "--smoke", action="store_true", help="2,000 files, 400 calls (shadow git 200), 20 older sessions"
    )
    p.add_argument("--out", type=Path, default=BENCH_DIR / ".work" / "LONG_SESSION.md")
    p.add_argument("--work", type=Path, default=BENCH_DIR / ".work" / "long" / "run")
    p.add_argument("--keep", action="store_true", help="keep workspaces and stores")
    p.add_argument("--child", choices=list(STRATEGIES), help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.files, args.calls, args.old_sessions = 2_000, 400, 20
        args.git_calls, args.agent_calls, args.restore_every = 200, 40, 100
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.child:
        args.result.write_text(json.dumps(measure(args.child, args, work)))
        return 0
    started, load_start = datetime.now(UTC), os.getloadavg()[0]
    fsync = fsync_probe(work)
    results: dict[str, Result] = {}
    for name in [n.strip() for n in args.strategies.split(",") if n.strip()]:
        t0 = time.perf_counter()
        print(f"[long] {name} …", file=sys.stderr, flush=True)
        results[name] = run_child(name, args, work)
        print(f"[long]   done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    command = ".venv/bin/python -m bench.long_session " + " ".join(argv if argv is not None else sys.argv[1:])
    load = f"{load_start:.1f} / {os.getloadavg()[0]:.1f}"
    report = render(results, _knobs(args), command.strip(), started, load, fsync)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    (work / "long-results.json").write_text(json.dumps(results, indent=1))
    print(report)
    failed = any("crashed" in r or r.get("errors") for r in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
