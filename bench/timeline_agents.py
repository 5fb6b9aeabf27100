"""What another agent's session costs the timeline: one tool call's row, side by side with one of
Retrace's own.

``python -m bench.timeline_agents [--checkpoints 2000] [--sessions 50] [--repeat 50]``

Builds a store (a real engine, a temporary folder) with ``--sessions`` Retrace sessions holding
``--checkpoints`` tool checkpoints between them and one Claude Code session (``agentSession``
first, a turn), builds the timeline cache once, then times ``TimelineCache.change`` (what the
server runs for every committed checkpoint: the row for ``timeline/didChange``) after a new
checkpoint of (a) Retrace's newest session and (b) the Claude Code session — (b) also watches the
other agents' journals (a listing of the sessions folder, a stat and the appended bytes per such
session). Then (c): a new prompt in the Claude Code session (a journal change nobody announces)
makes that session be folded again at the next change. Prints p50/p95 in ms and the ratio b/a;
nothing is asserted (timings are noisy: tests check the behaviour, this reports speed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from retrace.app.timeline import TimelineCache
from retrace.engine import Engine, EngineConfig
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import AgentSessionEvent, TurnEvent

CLAUDE = "claude-code-bench"


def _build(ws: Path, store: Path, checkpoints: int, sessions: int) -> Engine:
    (ws / "f.txt").write_text("0\n")
    engine = Engine.open(ws, store, config=EngineConfig(watcher=False))
    for s in range(sessions):
        engine.append_event(TurnEvent(turn_id=f"t{s}", text=f"task {s}"), session_id=f"ses_{s}")
    for i in range(checkpoints):
        (ws / "f.txt").write_text(f"{i}\n")
        s = i * sessions // checkpoints
        engine.checkpoint(
            f"edit_file: f.txt {i}",
            ["f.txt"],
            kind="tool",
            tool="edit_file",
            turn_id=f"t{s}",
            session_id=f"ses_{s}",
        )
    engine.append_event(
        AgentSessionEvent(agent="claude-code", external_session_id="bench"), session_id=CLAUDE
    )
    engine.append_event(TurnEvent(turn_id="ct0", text="claude task"), session_id=CLAUDE)
    return engine


def _timed(repeat: int, step: Callable[[int], float]) -> list[float]:
    return [step(n) for n in range(repeat)]


def _line(name: str, samples: list[float]) -> str:
    p95 = statistics.quantiles(samples, n=20)[-1] if len(samples) >= 20 else max(samples)
    return f"{name:<46} p50 {statistics.median(samples):7.2f} ms   p95 {p95:7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws, store = Path(tmp) / "ws", Path(tmp) / "store"
        ws.mkdir()
        engine = _build(ws, store, args.checkpoints, args.sessions)
        cache = TimelineCache()
        t0 = time.perf_counter()
        cache.stories(engine)
        build_ms = (time.perf_counter() - t0) * 1000
        last = args.sessions - 1

        def commit(session: str, turn: str, n: int, agent: bool) -> Checkpoint:
            (ws / "f.txt").write_text(f"{session} {n}\n")
            meta = {"agent": "claude-code"} if agent else {}
            return engine.checkpoint(
                "f.txt",
                ["f.txt"],
                kind="tool",
                tool="Write" if agent else "edit_file",
                turn_id=turn,
                session_id=session,
                meta=meta,
            )

        def change_of(cp: Checkpoint) -> float:
            t = time.perf_counter()
            assert cache.change(engine, cp, lambda _s, _c: None) is not None
            return (time.perf_counter() - t) * 1000

        own = _timed(args.repeat, lambda n: change_of(commit(f"ses_{last}", f"t{last}", n, False)))
        agent = _timed(args.repeat, lambda n: change_of(commit(CLAUDE, "ct0", n, True)))

        def prompt_then_change(n: int) -> float:
            engine.append_event(TurnEvent(turn_id=f"ct{n + 1}", text=f"prompt {n}"), session_id=CLAUDE)
            return change_of(commit(CLAUDE, f"ct{n + 1}", n, True))

        refold = _timed(max(3, args.repeat // 10), prompt_then_change)
        engine.close()
    load = os.getloadavg()[0]
    total = args.checkpoints + 2 * args.repeat
    print(
        f"store: {total} checkpoints, {args.sessions} Retrace sessions + 1 Claude Code; load avg {load:.2f}"
    )
    print(f"{'first build':<46} {build_ms:7.1f} ms")
    print(_line("(a) change: Retrace session's tool row", own))
    print(_line("(b) change: Claude Code session's tool row", agent))
    print(_line("(c) change after an unannounced Claude prompt", refold))
    print(f"ratio b/a (p50): {statistics.median(agent) / statistics.median(own):.2f}")


if __name__ == "__main__":
    main()
