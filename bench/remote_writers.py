"""Many machines, one bucket: concurrent writer processes syncing to one S3 server.

``--writers`` processes (default 20), each with its own workspace and store, make
``--checkpoints`` checkpoints (1–3 files edited each) and push every ``--push-every`` of them to
one bucket under one workspace prefix (``rclone serve s3`` on loopback). Meanwhile the parent
lists ``remote sessions`` every ``--poll`` seconds. Reported:

* throughput — objects and bytes uploaded per second over the writers' wall time, PUTs/s;
* sync lag — per checkpoint, from the moment it was written to the first listing whose session
  size covers it (p50/p95; includes the wait for the next push and the listing period);
* cost growth — with 20 / 100 / 300 sessions in the bucket (small ones, added by one more store):
  one ``remote sessions`` (requests, seconds) and one remote GC (requests, seconds; cold index
  cache, then warm).

``python -m bench.remote_writers [--writers 20] [--checkpoints 20] [--push-every 2]
[--sessions 20,100,300] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.remote.s3server import S3Server

from bench.report import fmt_bytes, fmt_ms, preamble, summary, table
from bench.workspace import generate
from retrace.engine import Engine
from retrace.sync import gc
from retrace.sync.objects import Bucket
from retrace.sync.service import RemoteService
from retrace.sync.state import SyncPaths

WORK = Path(__file__).resolve().parent / ".work" / "remote_writers"
WORKSPACE = "proj"


def writer(index: int, args: dict[str, Any], endpoint: str, url: str, env: dict[str, str], out: str) -> None:
    """One machine: checkpoints and pushes; writes its figures to ``out`` (JSON)."""
    root = Path(args["work"]) / f"w{index:02d}"
    ws, store = root / "ws", root / "store"
    generate(ws, args["files"], seed=index + 1)
    rng = random.Random(index)
    sid = f"w{index:02d}"
    svc = RemoteService(store, ws, env={**os.environ, **env})
    svc.add("origin", url, endpoint=endpoint, workspace_name=WORKSPACE)
    files = sorted(p for p in ws.rglob("*.py") if p.is_file())[:50] or sorted(
        p for p in ws.rglob("*") if p.is_file()
    )
    checkpoints: list[tuple[float, int]] = []
    pushes: list[dict[str, Any]] = []
    started = time.time()
    with Engine.open(ws, store, session_id=sid) as eng:
        journal = store / "sessions" / sid / "journal.jsonl"
        for i in range(args["checkpoints"]):
            for f in rng.sample(files, k=min(len(files), rng.randint(1, 3))):
                with f.open("a", encoding="utf-8") as fh:
                    fh.write(f"# writer {index} edit {i} {rng.random()}\n")
            eng.checkpoint(f"edit {i}")
            checkpoints.append((time.time(), journal.stat().st_size))
            if (i + 1) % args["push_every"] == 0 or i + 1 == args["checkpoints"]:
                t0 = time.perf_counter()
                r = svc.push()
                pushes.append(
                    {
                        "seconds": time.perf_counter() - t0,
                        "objects": r.packs * 2 + r.segments,
                        "bytes": r.bytes,
                    }
                )
    Path(out).write_text(
        json.dumps(
            {
                "sid": sid,
                "started": started,
                "ended": time.time(),
                "checkpoints": checkpoints,
                "pushes": pushes,
            }
        )
    )


class Observer:
    """Lists the bucket's sessions every ``period`` seconds: (time, {session: visible bytes})."""

    def __init__(self, service: RemoteService, period: float) -> None:
        self.service = service
        self.period = period
        self.snapshots: list[tuple[float, dict[str, int]]] = []
        self.list_seconds: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                listed = self.service.sessions()
            except Exception:  # a listing during start-up may fail: the next one counts
                listed = []
            self.list_seconds.append(time.perf_counter() - t0)
            self.snapshots.append((time.time(), {s.session_id: s.bytes for s in listed}))
            self._stop.wait(self.period)


def sync_lags(results: list[dict[str, Any]], snapshots: list[tuple[float, dict[str, int]]]) -> list[float]:
    lags: list[float] = []
    for r in results:
        for written, size in r["checkpoints"]:
            seen = next(
                (t for t, sizes in snapshots if t >= written and sizes.get(r["sid"], 0) >= size), None
            )
            if seen is not None:
                lags.append((seen - written) * 1000)
    return lags


def grow_to(target: int, filler: tuple[Path, Path], svc: RemoteService, have: int) -> None:
    """Add small sessions (two checkpoints each) from one more store until ``target`` exist."""
    ws, store = filler
    with Engine.open(ws, store) as eng:
        for n in range(have, target):
            eng.new_session(f"f{n:04d}")
            (ws / "notes.txt").write_text(f"session {n} first\n")
            eng.checkpoint("first")
            (ws / "notes.txt").write_text(f"session {n} second\n")
            eng.checkpoint("second")
    svc.push()


def measure_costs(svc: RemoteService, s3: S3Server, work: Path) -> dict[str, Any]:
    config = svc.remotes()[0]
    t0 = time.perf_counter()
    listed = svc.sessions()
    list_s = time.perf_counter() - t0
    bucket = Bucket(config, s3.env())
    paths = SyncPaths(svc.layout, config.name)
    shutil.rmtree(paths.index, ignore_errors=True)
    refs = work / "gc-refs.json"
    refs.unlink(missing_ok=True)
    out: dict[str, Any] = {"sessions": len(listed), "list_s": list_s}
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        loader = gc.cached_index_loader(bucket, None, paths)
        res = gc.collect(bucket, None, load_index=loader, refs=gc.RefCache(refs))
        out[f"gc_{label}_s"] = time.perf_counter() - t0
        out[f"gc_{label}_requests"] = dict(res.requests)
        out["segments"], out["packs"], out["live"] = res.segments, res.packs, res.live_blobs
    return out


def render(args: argparse.Namespace, started: datetime, figures: dict[str, Any]) -> str:
    cmd = (
        f"python -m bench.remote_writers --writers {args.writers} --checkpoints {args.checkpoints} "
        f"--push-every {args.push_every} --files {args.files} --sessions {args.sessions}"
    )
    lines = preamble("Many writers, one bucket", cmd, started, load=figures["load"])
    w = figures["writers"]
    lines += [
        f"{args.writers} writer processes, each its own workspace ({args.files} files) and store, "
        f"{args.checkpoints} checkpoints each, a push every {args.push_every}; one bucket, one "
        "workspace prefix, `rclone serve s3` on loopback (one process, on the same 2 cores).",
        "",
        *table(
            ("measure", "value"),
            [
                ["wall time (first writer start → last writer end)", f"{w['wall_s']:.1f} s"],
                ["checkpoints", str(w["checkpoints"])],
                ["pushes", str(w["pushes"])],
                ["objects uploaded", f"{w['objects']} ({w['objects_per_s']:.1f}/s)"],
                ["bytes uploaded", f"{fmt_bytes(w['bytes'])} ({fmt_bytes(w['bytes_per_s'])}/s)"],
                ["push duration p50 / p95", f"{fmt_ms(w['push']['p50'])} / {fmt_ms(w['push']['p95'])}"],
                [
                    "sync lag p50 / p95 (written → listed)",
                    f"{fmt_ms(w['lag']['p50'])} / {fmt_ms(w['lag']['p95'])} (n={int(w['lag']['count'])})",
                ],
                [
                    "`remote sessions` while writing p50 / p95",
                    f"{fmt_ms(w['list']['p50'])} / {fmt_ms(w['list']['p95'])}",
                ],
            ],
        ),
        "",
        "Cost with the number of sessions in the prefix (a GC run that deletes nothing; cold = every "
        "pack index, segment and snapshot fetched; warm = the indexes and what each segment and "
        "snapshot references cached locally, as on the second run on a machine):",
        "",
    ]
    rows = []
    for c in figures["costs"]:
        cold, warm = c["gc_cold_requests"], c["gc_warm_requests"]
        rows.append(
            [
                str(c["sessions"]),
                str(c["segments"]),
                str(c["packs"]),
                fmt_ms(c["list_s"] * 1000),
                fmt_ms(c["gc_cold_s"] * 1000),
                f"{cold.get('get', 0)} GET, {cold.get('list', 0)} LIST",
                fmt_ms(c["gc_warm_s"] * 1000),
                f"{warm.get('get', 0)} GET, {warm.get('list', 0)} LIST, {warm.get('put', 0)} PUT",
            ]
        )
    lines += table(
        (
            "sessions",
            "segments",
            "packs",
            "`remote sessions`",
            "GC cold",
            "GC cold requests",
            "GC warm",
            "GC warm requests",
        ),
        rows,
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--checkpoints", type=int, default=20)
    parser.add_argument("--push-every", type=int, default=2)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--poll", type=float, default=0.25)
    parser.add_argument("--sessions", default="20,100,300")
    parser.add_argument("--work", default=str(WORK))
    parser.add_argument("--out", default=str(WORK.parent / "REMOTE_WRITERS.md"))
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    load0 = os.getloadavg()[0]
    s3 = S3Server(work / "s3data")
    s3.start()
    try:
        figures = run(args, s3, work)
    finally:
        s3.stop()
    figures["load"] = f"{load0:.2f} / {os.getloadavg()[0]:.2f}"
    report = render(args, started, figures)
    Path(args.out).write_text(report, encoding="utf-8")
    (work / "figures.json").write_text(json.dumps(figures, indent=1, default=str))
    print(report)
    return 0


def run(args: argparse.Namespace, s3: S3Server, work: Path) -> dict[str, Any]:
    url = s3.url("bench")
    observer_ws = work / "observer" / "ws"
    observer_ws.mkdir(parents=True)
    observer = RemoteService(work / "observer" / "store", observer_ws, env={**os.environ, **s3.env()})
    observer.add("origin", url, endpoint=s3.endpoint, workspace_name=WORKSPACE)
    obs = Observer(observer, args.poll)
    obs.start()
    ctx = multiprocessing.get_context("spawn")
    opts = {
        "work": str(work),
        "files": args.files,
        "checkpoints": args.checkpoints,
        "push_every": args.push_every,
    }
    outs = [str(work / f"w{i:02d}.json") for i in range(args.writers)]
    procs = [
        ctx.Process(target=writer, args=(i, opts, s3.endpoint, url, s3.env(), outs[i]))
        for i in range(args.writers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    time.sleep(args.poll * 2 + 0.5)
    obs.stop()
    results = [json.loads(Path(o).read_text()) for o in outs if Path(o).exists()]
    if len(results) != args.writers:
        raise SystemExit(f"only {len(results)} of {args.writers} writers finished")
    wall = max(r["ended"] for r in results) - min(r["started"] for r in results)
    pushes = [p for r in results for p in r["pushes"]]
    objects = sum(p["objects"] for p in pushes)
    nbytes = sum(p["bytes"] for p in pushes)
    figures: dict[str, Any] = {
        "writers": {
            "wall_s": wall,
            "checkpoints": sum(len(r["checkpoints"]) for r in results),
            "pushes": len(pushes),
            "objects": objects,
            "objects_per_s": objects / wall,
            "bytes": nbytes,
            "bytes_per_s": nbytes / wall,
            "push": summary([p["seconds"] * 1000 for p in pushes]),
            "lag": summary(sync_lags(results, obs.snapshots)),
            "list": summary([s * 1000 for s in obs.list_seconds]),
        }
    }
    filler_ws = work / "filler" / "ws"
    filler_ws.mkdir(parents=True)
    filler_store = work / "filler" / "store"
    filler = RemoteService(filler_store, filler_ws, env={**os.environ, **s3.env()})
    filler.add("origin", url, endpoint=s3.endpoint, workspace_name=WORKSPACE)
    costs = []
    have = args.writers
    for target in (int(x) for x in args.sessions.split(",")):
        if target > have:
            grow_to(target - args.writers, (filler_ws, filler_store), filler, have - args.writers)
            have = target
        costs.append(measure_costs(observer, s3, work))
    figures["costs"] = costs
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
