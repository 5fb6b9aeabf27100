"""A Retrace restore side by side with ``git reset --hard`` + ``git clean -fd`` of the SAME change.

``python -m bench.restore_git [--files 1000,10000,50000] [--rounds 5] [--history 200] [--json]``

Per size: one workspace of N small source files, checkpointed through the engine API with a
history like an agent session's (``--history`` checkpoints, one tool call each: mostly edits of
one file, every 10th a new file, every 15th a deleted file; the issue's "last 200 checkpoints"
had 166 edits, 20 creates and 13 deletes). A git repository holds a byte-identical copy of the
workspace with one commit at each state a restore goes to. Then, per case (``1 step`` back,
``50 steps`` back, the ``first`` of the history), each round restores there and back again on
both sides; only the restore to the target is timed. Every restore is checked byte for byte
against the git copy at the same state (names, kinds, contents, executable bits). Printed per
case: p50 wall time of each side, the p50 of the per-round ratio Retrace/git, and the CPU time
(Retrace: this process; git: its child processes) with the load average of the run.

Run the code before a change with ``PYTHONPATH=<old tree>/server``: only ``Engine.open``,
``checkpoint``, ``restore`` and ``close`` are used.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine import Engine, EngineConfig

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def _body(seed: int, version: int) -> bytes:
    """A small source file (≈ 0.6–1.5 KiB), different per file and version."""
    lines = [f"# module {seed} version {version}\n"]
    lines += [f"def f{seed}_{k}(x):\n    return x * {k + version}\n" for k in range(12 + seed % 24)]
    return "".join(lines).encode()


def _put(roots: tuple[Path, ...], rel: str, data: bytes) -> None:
    for root in roots:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV, text=True
    )
    return out.stdout.strip()


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry below ``root`` (``.git`` left out): kind and content (link target, or bytes
    with the executable bit). Empty directories are not compared: git does not track them, and
    the history's deletes leave some on both sides."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == str(root) and ".git" in dirnames:
            dirnames.remove(".git")
        rel_dir = os.path.relpath(dirpath, root)
        for f in filenames:
            p = os.path.join(dirpath, f)
            rel = os.path.normpath(os.path.join(rel_dir, f))
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p).encode())
            else:
                with open(p, "rb") as fh:
                    out[rel] = ("x" if st.st_mode & 0o100 else "f", fh.read())
    return out


def _same(ws: Path, repo: Path) -> None:
    a, b = snapshot(ws), snapshot(repo)
    if a != b:
        diff = sorted(set(a) ^ set(b)) + sorted(p for p in set(a) & set(b) if a[p] != b[p])
        raise AssertionError(f"restore is not byte-exact: {len(diff)} paths differ, e.g. {diff[:5]}")


@dataclass
class Bed:
    """One size: the Retrace workspace + store and the git copy, with the states to restore to."""

    base: Path
    ws: Path
    repo: Path
    engine: Engine
    tip: tuple[str, str] = ("", "")
    """(Retrace checkpoint id, git commit) of the end of the history."""
    targets: dict[str, tuple[str, str]] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def build(files: int, history: int, *, seed: int = 26, watcher: bool = True) -> Bed:
    """The workspace, its store and its git copy (same bytes), with ``history`` checkpoints."""
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="rt-bench-rgit-"))
    ws, repo = base / "ws", base / "git"
    dirs = max(4, files // 20)  # ≈ 20 files a directory, two levels
    names = [f"pkg{(i % dirs) % 50}/mod{(i % dirs) // 50}/f{i:06d}.py" for i in range(files)]
    for i, rel in enumerate(names):
        _put((ws, repo), rel, _body(i, 0))
    _put((ws, repo), ".gitignore", b"__pycache__/\n*.pyc\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    engine = Engine.open(ws, base / "store", config=EngineConfig(watcher=watcher))
    bed = Bed(base, ws, repo, engine)
    live = list(names)
    marks = {history - 1: "first", 50: "50 steps", 1: "1 step"}  # steps back from the tip
    ops: list[str] = []
    at: dict[str, int] = {}
    for step in range(history):
        kind = "delete" if step % 15 == 7 else "create" if step % 10 == 4 else "edit"
        if kind == "delete":
            rel = live.pop(rng.randrange(len(live)))
            for root in (ws, repo):
                (root / rel).unlink()
        elif kind == "create":
            rel = f"pkg{rng.randrange(min(dirs, 50))}/new{step}/n{step:04d}.py"
            live.append(rel)
            _put((ws, repo), rel, _body(files + step, 1))
        else:
            rel = live[rng.randrange(len(live))]
            _put((ws, repo), rel, _body(step, step + 1))
        ops.append(kind)
        cp = engine.checkpoint(f"step {step}", changed_paths=[rel], kind="tool", tool="edit")
        back = history - 1 - step  # steps from here to the tip
        for want, label in marks.items():
            if back == want:
                _git(repo, "add", "-A")
                _git(repo, "commit", "-q", "--allow-empty", "-m", label)
                bed.targets[label] = (cp.id, _git(repo, "rev-parse", "HEAD"))
                at[label] = step
    for label, step in at.items():
        undone = ops[step + 1 :]  # what a restore there undoes
        bed.counts[label] = {k: undone.count(k) for k in ("edit", "create", "delete")}
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tip")
    bed.tip = (engine.head.id, _git(repo, "rev-parse", "HEAD"))
    _same(ws, repo)
    return bed


CASES = ("1 step", "50 steps", "first")


def _git_restore(repo: Path, commit: str) -> None:
    _git(repo, "reset", "-q", "--hard", commit)
    _git(repo, "clean", "-q", "-fd")


def _retrace_restore(engine: Engine, cp_id: str) -> None:
    out = engine.restore(cp_id)
    if out.kind not in ("applied", "nothingToRestore"):
        raise AssertionError(f"restore to {cp_id} did not apply: {out.kind}: {getattr(out, 'error', '')}")


def measure_case(bed: Bed, label: str, rounds: int, *, check: bool = True) -> dict[str, float]:
    cp_id, commit = bed.targets[label]
    rt: list[float] = []
    gt: list[float] = []
    rt_cpu: list[float] = []
    gt_cpu: list[float] = []
    for _ in range(rounds):
        c0, t0 = time.process_time(), time.perf_counter()
        _retrace_restore(bed.engine, cp_id)
        rt.append(time.perf_counter() - t0)
        rt_cpu.append(time.process_time() - c0)
        c0, t0 = _children_cpu(), time.perf_counter()
        _git_restore(bed.repo, commit)
        gt.append(time.perf_counter() - t0)
        gt_cpu.append(_children_cpu() - c0)
        if check:
            _same(bed.ws, bed.repo)
        _retrace_restore(bed.engine, bed.tip[0])
        _git_restore(bed.repo, bed.tip[1])
        if check:
            _same(bed.ws, bed.repo)
    ratios = [r / g for r, g in zip(rt, gt, strict=True)]
    return {
        "retrace_ms": statistics.median(rt) * 1000,
        "git_ms": statistics.median(gt) * 1000,
        "ratio_p50": statistics.median(ratios),
        "retrace_cpu_ms": statistics.median(rt_cpu) * 1000,
        "git_cpu_ms": statistics.median(gt_cpu) * 1000,
        "cpu_ratio_p50": statistics.median(r / g for r, g in zip(rt_cpu, gt_cpu, strict=True) if g > 0)
        if any(g > 0 for g in gt_cpu)
        else 0.0,
    }


def run(
    files: int, rounds: int, history: int, *, watcher: bool = True, check: bool = True
) -> dict[str, object]:
    bed = build(files, history, watcher=watcher)
    try:
        cases = {label: measure_case(bed, label, rounds, check=check) for label in CASES}
        return {"files": files, "counts": bed.counts, "cases": cases, "loadavg": os.getloadavg()[0]}
    finally:
        bed.engine.close()
        shutil.rmtree(bed.base, ignore_errors=True)


def profile(files: int, history: int, label: str = "first", top: int = 25, *, watcher: bool = True) -> str:
    """cProfile of one Retrace restore to ``label`` (after one untimed warm-up round trip)."""
    import cProfile
    import io
    import pstats

    bed = build(files, history, watcher=watcher)
    try:
        cp_id, _ = bed.targets[label]
        _retrace_restore(bed.engine, cp_id)
        _retrace_restore(bed.engine, bed.tip[0])
        prof = cProfile.Profile()
        prof.enable()
        _retrace_restore(bed.engine, cp_id)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
        return out.getvalue()
    finally:
        bed.engine.close()
        shutil.rmtree(bed.base, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--files", default="1000,10000,50000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--history", type=int, default=200)
    ap.add_argument("--no-watcher", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", metavar="CASE", help="print a cProfile of one restore to CASE (e.g. first)")
    args = ap.parse_args(argv)
    if args.profile:
        for n in (int(x) for x in args.files.split(",")):
            print(profile(n, args.history, args.profile, watcher=not args.no_watcher))
        return
    results = []
    for n in (int(x) for x in args.files.split(",")):
        r = run(n, args.rounds, args.history, watcher=not args.no_watcher)
        results.append(r)
        if not args.json:
            print(f"{n} files (load {r['loadavg']:.2f}):", flush=True)
            for label, c in r["cases"].items():  # type: ignore[attr-defined]
                cnt = r["counts"][label]  # type: ignore[index]
                print(
                    f"  {label:9s} ({cnt['edit']}e/{cnt['create']}c/{cnt['delete']}d): "
                    f"retrace {c['retrace_ms']:8.1f} ms  git {c['git_ms']:8.1f} ms  "
                    f"ratio p50 {c['ratio_p50']:.2f}x  "
                    f"cpu {c['retrace_cpu_ms']:.0f}/{c['git_cpu_ms']:.0f} ms ({c['cpu_ratio_p50']:.2f}x)",
                    flush=True,
                )
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
