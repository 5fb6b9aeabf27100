"""Checkpoint latency with a remote configured: healthy, slow, down — side by side.

The agent path of :mod:`bench.agent_path` (real ``AgentService``, real tool-call code, the offline
fake Messages API; per call, tool result → ``checkpointCreated``) runs once per scenario on the
same generated workspace, while a sync thread in the same process pushes to a real S3 server
(``rclone serve s3``) through the fault proxy of the remote tests, as the server's sync
scheduler would (its own thread, never the engine gate):

* ``no remote`` — no sync thread;
* ``healthy`` — pushes back to back (a sync always running);
* ``slow`` — the proxy delays every request by ``--delay`` seconds (default 2);
* ``down`` — the proxy answers 503 to everything; the thread retries without back-off (worse
  than the scheduler, which backs off).

Report: p50/p95/p99 per scenario and the ratio to ``no remote``; pushes completed and failed.

``python -m bench.remote_latency [--files 2000] [--calls 120] [--delay 2] [--out FILE]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.remote.fault_proxy import FaultProxy
from tests.remote.s3server import S3Server

from bench.agent_path import measure_agent_path
from bench.report import PERCENTILE_HEADER, fmt_ratio, percentile_row, preamble, summary, table
from bench.workspace import generate
from retrace.engine import Engine
from retrace.sync.errors import RemoteError
from retrace.sync.service import RemoteService

WORK = Path(__file__).resolve().parent / ".work" / "remote_latency"
SCENARIOS = ("no remote", "healthy", "slow", "down")


class SyncLoop:
    """Pushes back to back on its own thread until stopped; counts outcomes."""

    def __init__(self, service: RemoteService, pause: float) -> None:
        self.service = service
        self.pause = pause
        self.pushes = 0
        self.failures = 0
        self.objects = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float) -> None:
        self._stop.set()
        self._thread.join(wait)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                report = self.service.push(cancel=self._stop)
                self.pushes += 1
                self.objects += report.packs * 2 + report.segments
            except RemoteError as exc:
                self.failures += 1
                self.last_error = str(exc)[:120]
            self._stop.wait(self.pause)


def run_scenario(name: str, s3: S3Server, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.work) / name.replace(" ", "-")
    shutil.rmtree(root, ignore_errors=True)
    ws, store = root / "ws", root / "store"
    generate(ws, args.files, args.seed)
    engine = Engine.open(ws, store, session_id=f"bench-{name.replace(' ', '-')}")
    proxy: FaultProxy | None = None
    loop: SyncLoop | None = None
    try:
        if name != "no remote":
            proxy = FaultProxy(s3.port).start()
            if name == "slow":
                proxy.delay(args.delay)
            elif name == "down":
                proxy.down()
            service = RemoteService(store, ws, env={**os.environ, **s3.env()})
            service.add(
                "origin", s3.url("bench"), endpoint=proxy.endpoint, workspace_name=name.replace(" ", "-")
            )
            loop = SyncLoop(service, pause=0.05 if name == "healthy" else 0.2)
            loop.start()
            time.sleep(0.5)  # the sync is under way before the first call
        measured = measure_agent_path(engine, args.calls, args.seed)
    finally:
        if loop is not None:
            loop.stop(wait=5 * args.delay + 10)
        if proxy is not None:
            proxy.stop()
        engine.close()
    return {
        "name": name,
        "summary": summary(measured["samples"]),
        "errors": measured["errors"],
        "pushes": loop.pushes if loop else 0,
        "failures": loop.failures if loop else 0,
        "objects": loop.objects if loop else 0,
        "last_error": loop.last_error if loop else "",
    }


def render(results: list[dict[str, Any]], args: argparse.Namespace, started: datetime) -> str:
    cmd = f"python -m bench.remote_latency --files {args.files} --calls {args.calls} --delay {args.delay}"
    load = f"{os.getloadavg()[0]:.2f}"
    lines = preamble("Checkpoint latency with a remote: healthy / slow / down", cmd, started, load=load)
    lines += [
        f"{args.files}-file workspace, {args.calls} `edit_file` calls per scenario through the agent path "
        "(tool result → `checkpointCreated`); the sync thread pushes to `rclone serve s3` through the "
        "fault proxy in the same process.",
        "",
    ]
    lines += table(PERCENTILE_HEADER, [percentile_row(r["name"], r["summary"]) for r in results])
    base = results[0]["summary"]
    rows = [
        [
            r["name"],
            fmt_ratio(r["summary"]["p50"], base["p50"]),
            fmt_ratio(r["summary"]["p95"], base["p95"]),
            str(r["pushes"]),
            str(r["failures"]),
            str(r["objects"]),
        ]
        for r in results
    ]
    lines += [
        "",
        *table(
            ("scenario", "p50 / no remote", "p95 / no remote", "pushes ok", "pushes failed", "objects up"),
            rows,
        ),
    ]
    errors = [f"{r['name']}: {e}" for r in results for e in r["errors"]]
    if errors:
        lines += ["", "Errors: " + "; ".join(errors)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=120)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--work", default=str(WORK))
    parser.add_argument("--out", default=str(WORK.parent / "REMOTE_LATENCY.md"))
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    s3 = S3Server(Path(args.work) / "s3data")
    s3.start()
    try:
        results = [run_scenario(n.strip(), s3, args) for n in args.scenarios.split(",")]
    finally:
        s3.stop()
    report = render(results, args, started)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
