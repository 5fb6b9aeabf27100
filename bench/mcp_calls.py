"""``python -m bench.mcp_calls``: one ``retrace mcp`` process, driven by the official SDK client.

A workspace of ``--files`` files and a store of ``--checkpoints`` checkpoints (a tool call of
``claude-code`` changing one file each, made once under ``bench/.work/mcp-<files>-<n>/``). Then
``--runs`` calls of each tool, side by side in one run, each timed from the client (the request
out, the answer parsed): ``list_checkpoints`` (the newest 50; with a path filter), ``show_checkpoint``
(a tool call's diff against its parent), ``restore_checkpoint`` (a dry run) and
``create_checkpoint`` (one changed file each). Every read opens the store read-only for the call,
so the list figure is mostly the store's open (journals replayed with the history index).
Twice: with no server (writes open the store for the call) and while a real ``retrace serve``
holds the store (writes go through its relay socket; it has no editor that applies edits, so it
restores on disk). Wall clock p50/p95 and the load average at start and end: a shared machine,
compare ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.relay import Server, sample_tree
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store.events import AgentSessionEvent
from retrace.relay import wire

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"
SESSION = "claude-code-bench"


def build(files: int, checkpoints: int) -> tuple[Path, Path, list[str]]:
    base = WORK / f"mcp-{files}-{checkpoints}"
    ws, store = base / "ws", base / "store"
    if not (store / "store.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        sample_tree(ws, files)
        with Engine.open(ws, store, session_id="cli", config=EngineConfig(watcher=False)) as engine:
            engine.new_session(SESSION)
            engine.append_event(
                AgentSessionEvent(agent="claude-code", external_session_id="bench"), session_id=SESSION
            )
            for n in range(checkpoints):
                rel = f"src/pkg{n % 20}/mod{n % files}.py"
                with (ws / rel).open("a") as f:
                    f.write(f"# edit {n}\n")
                engine.checkpoint(
                    label=f"Edit {rel}", changed_paths=[rel], kind="tool", tool="Edit",
                    tool_call_id=f"toolu_{n}", session_id=SESSION, meta={"agent": "claude-code"},
                )  # fmt: skip
    with Engine.open(ws, store, readonly=True) as engine:
        ids = [cp.id for cp in engine.timeline() if cp.kind == "tool"]
    return ws, store, ids


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


async def run(ws: Path, store: Path, ids: list[str], runs: int) -> dict[str, list[float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrace", "mcp", "--workspace", str(ws), "--store", str(store)],
        env=dict(os.environ),
    )
    times: dict[str, list[float]] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()

        async def timed(variant: str, tool: str, arguments: dict[str, Any]) -> None:
            start = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            times.setdefault(variant, []).append((time.perf_counter() - start) * 1000)
            assert not result.isError, result.content

        for n in range(runs):
            await timed("list_checkpoints (newest 50)", "list_checkpoints", {})
            await timed("list_checkpoints (path filter)", "list_checkpoints", {"path": "pkg3/"})
            await timed("show_checkpoint (diff vs parent)", "show_checkpoint", {"id": ids[-1 - n]})
            await timed("restore_checkpoint (dry run)", "restore_checkpoint", {"id": ids[len(ids) // 2]})
            (ws / "bench-note.txt").write_text(f"note {n}\n")
            await timed("create_checkpoint", "create_checkpoint", {"label": f"bench {n}"})
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--checkpoints", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    ws, store, ids = build(args.files, args.checkpoints)
    load_start = os.getloadavg()[0]
    alone = asyncio.run(run(ws, store, ids, args.runs))
    server = Server(ws, store)
    try:
        for _ in range(600):
            if wire.socket_path(store).exists():
                break
            time.sleep(0.05)
        beside = asyncio.run(run(ws, store, ids, args.runs))
    finally:
        server.stop()
    load_end = os.getloadavg()[0]
    print(
        f"{args.files} files, {len(ids)} tool checkpoints, {args.runs} runs; "
        f"load {load_start:.2f} → {load_end:.2f}"
    )
    print("| call | no server p50 ms | p95 ms | server holds the store p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for variant, samples in alone.items():
        p50, p95 = summary(samples)
        q50, q95 = summary(beside[variant])
        print(f"| {variant} | {p50:.1f} | {p95:.1f} | {q50:.1f} | {q95:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
