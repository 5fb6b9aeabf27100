"""Per tool call, end to end inside the server: tool result → ``checkpointCreated`` sent.

Drives the real agent path (:class:`retrace.agent.session.AgentService`, the real tool-call code,
the real anthropic SDK) against the offline fake Messages API
(:class:`retrace.offline.FakeModel`) scripted to ask for ``edit_file`` calls on existing files.
Two timestamps per call, taken bench-side without touching production code: the moment the
tool's ``execute`` returns (the tool-call module's ``execute`` is wrapped for the duration of
the run) and the moment the host is handed the call's ``checkpointCreated`` event (a recording
``AgentHost``). The difference is everything the server does between a tool's result and the
client being told: journaling the result, the checkpoint, and the event. Also timed: a fresh
``AgentService`` loading every session in the store and answering its first timeline query (the
agent's share of a server start-up; the LSP server's own start-up is not included).

Run alone (``python -m bench.agent_path``, see the end of this module) or from
:mod:`bench.long_session`.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.tree import IgnoreRules, walk
from retrace.agent import tool_call
from retrace.agent.notifications import PermissionDecision, PermissionRequest
from retrace.agent.permissions import PermissionSettings
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.offline import FakeModel, Scenario

CALLS_PER_TURN = 40
"""Below the agent's per-turn model-call limit, so every scripted call runs."""


@dataclass
class AllowingHost:
    """An :class:`AgentHost` for benchmarks: every permission allowed, no editor, errors kept."""

    errors: list[str] = field(default_factory=list)

    async def emit(self, event: Any) -> None:
        if event.kind == "error" and not getattr(event, "retrying", False):
            self.errors.append(str(event.message))

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        return "allow"

    def editor_state(self) -> dict[str, Any] | None:
        return {"activeEditor": None, "openEditors": []}

    def dirty_paths(self) -> set[str]:
        return set()


@dataclass
class TimingHost(AllowingHost):
    """:class:`AllowingHost` that also timestamps each tool checkpoint's ``checkpointCreated``."""

    created_ns: list[int] = field(default_factory=list)

    async def emit(self, event: Any) -> None:
        if event.kind == "checkpointCreated" and event.checkpoint.kind == "tool":
            self.created_ns.append(time.perf_counter_ns())
        await super().emit(event)


def edit_calls(workspace: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` ``edit_file`` inputs, each replacing a line that occurs once in an existing file."""
    rng = random.Random(seed)
    files = sorted(rel for rel, st in walk(workspace, IgnoreRules.for_workspace(workspace)) if st.st_size > 0)
    rng.shuffle(files)
    calls: list[dict[str, Any]] = []
    for rel in files:
        if len(calls) == count:
            break
        try:
            text = (workspace / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        line = next((ln for ln in text.splitlines() if len(ln) > 8 and text.count(ln) == 1), None)
        if line is None:
            continue
        calls.append({"path": rel, "old_string": line, "new_string": f"{line}  # agent edit {len(calls)}"})
    return calls


def _scenario(calls: list[dict[str, Any]]) -> Scenario:
    responses: list[dict[str, Any]] = []
    for start in range(0, len(calls), CALLS_PER_TURN):
        for c in calls[start : start + CALLS_PER_TURN]:
            responses.append({"toolCalls": [{"name": "edit_file", "input": c}]})
        responses.append({"text": "done"})
    return Scenario.model_validate({"responses": responses})


async def _drive(engine: Engine, host: TimingHost, fake: FakeModel, turns: int) -> float:
    """Run the turns; returns the ms from a fresh service to its first timeline answer."""
    settings = AgentSettings(
        model="claude-test-model",
        base_url=fake.base_url,
        permissions=PermissionSettings(write="auto", command="auto"),
        retry_base_delay_s=0.01,
        max_retries=3,
    )
    t0 = time.perf_counter_ns()
    service = AgentService(engine, host, settings)
    await service.load()
    await service.gate.call(engine.timeline, engine.session_id)
    startup_ms = (time.perf_counter_ns() - t0) / 1e6
    sid: str | None = None
    for turn in range(turns):
        sid, _ = await service.prompt(f"make the next edits ({turn + 1}/{turns})", sid)
        await service.wait_idle(sid)
    return startup_ms


def measure_agent_path(engine: Engine, calls: int, seed: int) -> dict[str, Any]:
    """Run ``calls`` edit tool calls through the agent; per-call ms from tool result to event."""
    inputs = edit_calls(engine.workspace, calls, seed)
    host = TimingHost()
    done_ns: list[int] = []
    patched = vars(tool_call)  # the tool-call module's globals: its ``execute`` is wrapped
    real_execute: Callable[..., Awaitable[Any]] = patched["execute"]

    async def timed_execute(*args: Any, **kwargs: Any) -> Any:
        result = await real_execute(*args, **kwargs)
        done_ns.append(time.perf_counter_ns())
        return result

    fake = FakeModel(_scenario(inputs))
    fake.start()
    patched["execute"] = timed_execute
    t0 = time.perf_counter_ns()
    try:
        startup_ms = asyncio.run(_drive(engine, host, fake, -(-len(inputs) // CALLS_PER_TURN)))
    finally:
        patched["execute"] = real_execute
        fake.stop()
    wall_ms = (time.perf_counter_ns() - t0) / 1e6
    errors = list(host.errors)
    if len(done_ns) != len(host.created_ns):
        errors.append(f"{len(done_ns)} tool results but {len(host.created_ns)} checkpointCreated events")
    samples = [(c - d) / 1e6 for d, c in zip(done_ns, host.created_ns, strict=False)]
    return {
        "requested": len(inputs),
        "samples": samples,
        "wall_ms": wall_ms,
        "startup_ms": startup_ms,
        "errors": errors,
    }


# --------------------------------------------------------------------------- standalone CLI
#
# ``python -m bench.agent_path --files 50000 --calls 300 [--checkpoints 10000] [--before DIR]``
# A workspace and its store (a cold open, then ``--checkpoints`` engine-made edit checkpoints)
# are made once per size under ``--work`` and reused: each run is a warm open of that store (its
# stat cache valid, as for a server restarted on a real project) and adds its calls to it. Each
# run is a fresh interpreter (its own peak RSS); with ``--before DIR`` (an older tree:
# ``git archive <rev> server | tar -x -C DIR``) runs alternate between that server and this one
# on the same store, in the same invocation.


def _template(work: Path, files: int, checkpoints: int, seed: int) -> Path:
    from bench.workspace import generate

    tpl = work / f"tpl-{files}-{checkpoints}-{seed}"
    if (tpl / "done").exists():
        return tpl
    shutil.rmtree(tpl, ignore_errors=True)
    tpl.mkdir(parents=True)
    generate(tpl / "ws", files, seed)
    engine = Engine.open(tpl / "ws", tpl / "store")
    try:
        rng = random.Random(seed + 1)
        paths = sorted(
            rel for rel, st in walk(tpl / "ws", IgnoreRules.for_workspace(tpl / "ws")) if st.st_size
        )
        for i in range(checkpoints):
            rel = rng.choice(paths)
            with (tpl / "ws" / rel).open("ab") as f:
                f.write(f"# earlier edit {i}\n".encode())
            engine.checkpoint(f"edit {rel}", [rel], kind="tool", tool="edit_file")
    finally:
        engine.close()
    (tpl / "done").write_text("")
    return tpl


def _child(run_dir: Path, calls: int, seed: int, profile: Path | None, trace_mem: bool) -> dict[str, Any]:
    """One measured run in this interpreter, on ``run_dir/ws`` and ``run_dir/store``."""
    import resource

    from bench.report import rss_now_kb, summary

    if trace_mem:
        import tracemalloc

        tracemalloc.start(8)
    t0 = time.perf_counter_ns()
    engine = Engine.open(run_dir / "ws", run_dir / "store")
    open_ms = (time.perf_counter_ns() - t0) / 1e6
    rss_open = rss_now_kb()
    prof = None
    if profile is not None:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    try:
        r = measure_agent_path(engine, calls, seed)
    finally:
        if prof is not None and profile is not None:
            prof.disable()
            prof.dump_stats(str(profile))
    out = {k: r[k] for k in ("requested", "wall_ms", "startup_ms", "errors")}
    out |= {"per_call": summary(r["samples"]), "open_ms": open_ms, "rss_open_kb": rss_open}
    out["rss_end_kb"] = rss_now_kb()
    if trace_mem:
        import tracemalloc

        snap = tracemalloc.take_snapshot()
        out["heap_mib"] = sum(s.size for s in snap.statistics("filename")) / 2**20
        out["heap_top"] = [
            f"{s.size / 2**20:.1f} MiB {s.count} {s.traceback.format()[-1].strip()}"
            for s in snap.statistics("lineno")[:25]
        ]
    engine.close()
    out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def _run(label: str, tpl: Path, work: Path, args: Any, server: Path | None) -> dict[str, Any]:
    """One child run (``server``: an older tree's ``server/`` to import instead of this one's)."""
    import json
    import os
    import subprocess
    import sys

    run_dir = tpl
    os.sync()
    result_file = run_dir / "result.json"
    cmd = [sys.executable, "-m", "bench.agent_path", "--child", str(run_dir), "--result", str(result_file)]
    cmd += ["--calls", str(args.calls), "--seed", str(args.seed)]
    cmd += ["--tracemalloc"] * args.tracemalloc
    if args.profile:
        cmd += ["--profile-out", str(work / f"{label}.prof")]
    env = dict(os.environ)
    if server is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(server.resolve() / "server"), str(Path(__file__).parent.parent)]
        )
    subprocess.run(cmd, check=True, env=env, cwd=Path(__file__).parent.parent)
    result: dict[str, Any] = json.loads(result_file.read_text())
    result_file.unlink()
    return result


def _line(label: str, r: dict[str, Any]) -> str:
    pc = r["per_call"]
    return (
        f"{label:>7}: {pc['count']} calls  p50 {pc['p50']:.2f}  p95 {pc['p95']:.2f}  p99 {pc['p99']:.2f}"
        f"  max {pc['max']:.2f} ms | open {r['open_ms']:.0f} ms, RSS after open {r['rss_open_kb'] / 1024:.0f}"
        f" MiB, at end {r['rss_end_kb'] / 1024:.0f} MiB, peak {r['maxrss_kb'] / 1024:.0f} MiB"
        + (f", heap {r['heap_mib']:.1f} MiB" if "heap_mib" in r else "")
        + (f" | errors {r['errors']}" if r["errors"] else "")
    )


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import os

    p = argparse.ArgumentParser(prog="python -m bench.agent_path", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=50_000)
    p.add_argument("--calls", type=int, default=300, help="edit_file calls through the agent")
    p.add_argument(
        "--checkpoints", type=int, default=0, help="engine-made edit checkpoints in the store first"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=1, help="runs of each server (alternating with --before)")
    p.add_argument("--before", type=Path, help="an older tree whose server/ to measure too")
    p.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the event-loop thread (--work/<label>.prof; engine calls run in the gate's thread)",
    )
    p.add_argument("--tracemalloc", action="store_true", help="heap after the calls, top 25 lines")
    p.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "agent_path")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--profile-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        r = _child(args.child, args.calls, args.seed, args.profile_out, args.tracemalloc)
        args.result.write_text(json.dumps(r))
        return 0
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    tpl = _template(work, args.files, args.checkpoints, args.seed)
    print(
        f"{args.files} files, {args.checkpoints} earlier checkpoints, {args.calls} agent edit calls; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    failed = False
    for _ in range(args.rounds):
        for label, server in (("before", args.before), ("now", None)):
            if label == "before" and server is None:
                continue
            r = _run(label, tpl, work, args, server)
            failed = failed or bool(r["errors"]) or r["per_call"]["count"] != r["requested"]
            print(_line(label, r), flush=True)
            for row in r.get("heap_top", []):
                print("   ", row)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
