"""``python -m bench.hooks``: one ``retrace hook claude-code`` call, as Claude Code makes it.

A workspace of ``--files`` files (``bench/.work/relay-<files>/``, shared with ``bench.relay``) and
its store. Side by side in one run, ``--runs`` rounds each, one file written by the "tool" in
every round, every call a fresh process fed the documented hook JSON on stdin:

* ``python -c pass`` — the interpreter's own start-up (the unit of every ratio);
* with a REAL server holding the store (``python -m retrace serve``, as the editor starts it):
  ``PreToolUse`` (what others changed is recorded first), ``PostToolUse`` of ``Write`` (its one
  file) and ``PostToolUse`` of ``Bash`` (changes detected by the server's watcher) — the issue's
  target: p95 ≤ 60 ms per call;
* no editor, with the headless holder (what a user gets): the first call opens the store and
  starts a holder; the same three calls then go to it (target ≤ 150 ms per call);
* cold, no server and no holder (``RETRACE_NO_HOLDER=1``): each call opens the store itself —
  the floor the holder removes.

Bytecode caches are written and used (``PYTHONDONTWRITEBYTECODE`` dropped; a warm-up call
first). Wall clock p50/p95 per call, the hook process's CPU time (``RUSAGE_CHILDREN``) and the server's
(a mean), and the load average at start and end: a shared machine, compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.relay import RETRACE, Server, build, timed

HOT_TARGET_MS = 60.0
COLD_TARGET_MS = 150.0
SETTLE_S = 10.0
SESSION = "0b7a2f44-5c1d-4e8a-9f00-bench0000001"


def event(ws: Path, name: str, **fields: Any) -> bytes:
    raw = {
        "session_id": SESSION,
        "transcript_path": f"/tmp/{SESSION}.jsonl",
        "cwd": str(ws),
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }
    return json.dumps(raw).encode()


ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "RETRACE_STORE")}
"""Bytecode caches written and used, as on a user's machine (a warm-up call comes first)."""


NO_HOLDER = {**ENV, "RETRACE_NO_HOLDER": "1"}
"""A cold call that starts no headless holder (the cold series)."""
_env = {"current": NO_HOLDER}


def call(ws: Path, store: Path, payload: bytes) -> None:
    cmd = [RETRACE, "hook", "claude-code", "--workspace", str(ws), "--store", str(store)]
    proc = subprocess.run(cmd, input=payload, capture_output=True, env=_env["current"], check=False)
    if proc.returncode != 0 or proc.stdout:
        raise RuntimeError(f"hook failed: {proc.returncode} {proc.stdout!r} {proc.stderr!r}")


def round_calls(ws: Path, store: Path, label: str) -> dict[str, Any]:
    """The three calls of one round (``i``: the round), each a closure for :func:`timed`."""
    target = ws / "src" / "bench_hooks.py"

    def pre(i: int) -> None:
        tool_input = {"file_path": str(target), "content": f"x = {i}\n"}
        call(
            ws,
            store,
            event(ws, "PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=f"{label}w{i}"),
        )

    def write(i: int) -> None:
        tool_input = {"file_path": str(target), "content": f"x = {i}\n"}
        payload = event(
            ws, "PostToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=f"{label}w{i}"
        )
        call(ws, store, payload)

    def bash(i: int) -> None:
        tool_input = {"command": f"echo {i} > src/bench_bash.txt"}
        call(
            ws,
            store,
            event(ws, "PostToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id=f"{label}b{i}"),
        )

    def before_write(i: int) -> None:
        target.write_text(f"x = {i}\n")

    def before_bash(i: int) -> None:
        (ws / "src" / "bench_bash.txt").write_text(f"{i}\n")

    return {
        "pre": pre,
        "write": write,
        "bash": bash,
        "before_write": before_write,
        "before_bash": before_bash,
    }


def measure(
    ws: Path, store: Path, runs: int, server: Server | None, label: str
) -> dict[str, dict[str, float]]:
    """``runs`` rounds of PreToolUse, PostToolUse Write, PostToolUse Bash, interleaved (a load
    change hits the three alike)."""
    calls = round_calls(ws, store, label)
    call(ws, store, event(ws, "UserPromptSubmit", prompt="bench"))  # also the warm-up (bytecode)
    steps: dict[str, tuple[Callable[[int], None], Callable[[int], None]]] = {
        "PreToolUse Write": (_nothing, calls["pre"]),
        "PostToolUse Write": (calls["before_write"], calls["write"]),
        "PostToolUse Bash": (calls["before_bash"], calls["bash"]),
    }
    per_round: dict[str, list[dict[str, float]]] = {name: [] for name in steps}
    for i in range(runs):
        for name, (before, run_one) in steps.items():
            per_round[name].append(timed(1, _at(before, i), _at(run_one, i), server))
    return {name: _merge(figures) for name, figures in per_round.items()}


def _nothing(_i: int) -> None:
    return None


def _at(step: Callable[[int], None], i: int) -> Callable[[int], None]:
    """``step`` of round ``i`` (``timed`` counts its own single run from 0)."""
    return lambda _j: step(i)


def _merge(rounds: list[dict[str, float]]) -> dict[str, float]:
    walls = sorted(r["p50"] for r in rounds)
    return {
        "p50": statistics.median(walls),
        "p95": walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))],
        "cpu": statistics.median(r["cpu"] for r in rounds),
        "server_cpu": statistics.fmean(r["server_cpu"] for r in rounds),
    }


def _release(store: Path, ws: Path) -> None:
    """Let the holder go (it would hold the store for its idle time otherwise)."""
    from retrace.relay.client import forward

    forward(store, "release", {}, 30.0, workspace=ws)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args(argv)
    ws, store = build(args.files)
    load0 = os.getloadavg()
    unit = timed(
        args.runs,
        lambda _i: None,
        lambda _i: subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True),
        None,
    )
    server = Server(ws, store)
    time.sleep(SETTLE_S)  # the server's own start-up work (the deferred catch-up, the SDK import)
    try:
        hot = measure(ws, store, args.runs, server, "hot")
    finally:
        server.stop()
    _env["current"] = ENV  # a holder may start: the first call below starts it
    try:
        held = measure(ws, store, args.runs, None, "held")
    finally:
        _release(store, ws)
    _env["current"] = NO_HOLDER
    cold = measure(ws, store, args.runs, None, "cold")
    load1 = os.getloadavg()
    print(f"files={args.files} runs={args.runs} load={load0[0]:.2f}->{load1[0]:.2f}")
    print(f"{'call':38} {'p50 ms':>8} {'p95 ms':>8} {'cpu ms':>8} {'srv cpu':>8} {'x pass':>7} target")
    print(f"{'python -c pass':38} {unit['p50']:8.1f} {unit['p95']:8.1f} {unit['cpu']:8.1f} {'':>8} {1:7.1f}")
    for name, figures, target in (
        *((f"server running: {k}", v, HOT_TARGET_MS) for k, v in hot.items()),
        *((f"no editor, holder: {k}", v, COLD_TARGET_MS) for k, v in held.items()),
        *((f"cold, no holder: {k}", v, COLD_TARGET_MS) for k, v in cold.items()),
    ):
        ok = "ok" if figures["p95"] <= target else "MISSED"
        print(
            f"{name:38} {figures['p50']:8.1f} {figures['p95']:8.1f} {figures['cpu']:8.1f} "
            f"{figures['server_cpu']:8.1f} {figures['p50'] / unit['p50']:7.1f} ≤{target:.0f} {ok}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
