"""The status bar's ``retrace/stats`` answer after one timeline change, before and after it came
from the metrics' incremental fold (``app/metrics/status_figures.py``).

Not part of the test run. ``python -m bench.stats_pipeline [sessions] [calls]`` builds a store of
``sessions`` agent sessions with ``calls`` tool calls each (a turn's messages, intent, result with
a 2 KB output, a checkpoint), answers once (warm), makes one checkpoint and times the next answer:

* before — what the server did: the store's statistics read whole on every answer (today's
  one-shot read, ``read_store_stats``, what ``retrace stats`` does once: the engine's own
  statistics it replaced are gone), and on the first answer a fold of every session's
  conversation (``search_all_tool_calls`` → ``load_all``, then kept in memory);
* after — :func:`status_figures` (each journal's cursor reads on from where it stopped).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from retrace.agent.conversation import Conversation
from retrace.app.metrics.status_figures import status_figures
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store import cursor
from retrace.engine.store.events import MessageEvent, ToolCallIntentEvent, ToolCallResultEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.store_figures import read_store_stats


def build(engine: Engine, sessions: int, calls: int) -> None:
    out = "x" * 2048
    for s in range(sessions):
        sid = f"ses_{s}"
        engine.new_session(sid)
        parent: str | None = None
        for n in range(calls):
            turn, mid = f"t{n}", f"m{s}_{n}"
            engine.append_event(TurnEvent(turn_id=turn, text=f"task {n}"), session_id=sid, durable=False)
            text = [{"type": "text", "text": f"do {n}"}]
            msg = MessageEvent(id=mid, parent=parent, role="user", content=text, turn_id=turn, kind="prompt")
            engine.append_event(msg, session_id=sid, durable=False)
            parent = mid
            call = f"toolu_{s}_{n}"
            intent = ToolCallIntentEvent(id=call, tool="read_file", input={"path": "a.txt"}, turn_id=turn)
            engine.append_event(intent, session_id=sid, durable=False)
            result = ToolCallResultEvent(id=call, tool="read_file", status="ok", output=out, turn_id=turn)
            engine.append_event(result, session_id=sid, durable=False)


def fold_all(engine: Engine) -> None:
    """What ``search_all_tool_calls`` did on the first answer (then kept: every conversation)."""
    for sid in engine.sessions():
        Conversation.from_events(sid, engine.events(sid))


def main(argv: list[str]) -> None:
    sessions = int(argv[0]) if argv else 20
    calls = int(argv[1]) if len(argv) > 1 else 200
    parsed: list[int] = []
    original = cursor.read_increment

    def counting(path: Path, mark: cursor.JournalMark | None, **kw: object) -> cursor.Increment | None:
        inc = original(path, mark, **kw)  # type: ignore[arg-type]
        if inc is not None:
            parsed.append(len(inc.new))
        return inc

    cursor.read_increment = counting
    with tempfile.TemporaryDirectory() as tmp:
        ws, store = Path(tmp, "ws"), Path(tmp, "store")
        ws.mkdir()
        (ws / "a.txt").write_text("0\n")
        with Engine.open(ws, store, config=EngineConfig(watcher=False)) as engine:
            build(engine, sessions, calls)
            layout = StoreLayout(store)
            journals = sum(layout.journal(s).stat().st_size for s in layout.session_ids())
            t0 = time.perf_counter()
            fold_all(engine)
            first_fold = time.perf_counter() - t0
            read_store_stats(layout, engine.blobs)
            status_figures(layout, engine.blobs.usage())
            (ws / "a.txt").write_text("1\n")
            engine.checkpoint("one change", None)
            t0 = time.perf_counter()
            read_store_stats(layout, engine.blobs)
            old = time.perf_counter() - t0
            parsed.clear()
            t0 = time.perf_counter()
            status_figures(layout, engine.blobs.usage())
            new = time.perf_counter() - t0
    load = os.getloadavg()[0]
    print(
        f"store: {sessions} sessions x {calls} tool calls, journals {journals / 1e6:.1f} MB; load {load:.2f}"
    )
    print("| | before | after | ratio |")
    print("|---|---|---|---|")
    print(f"| answer after one checkpoint | {old * 1000:.1f} ms | {new * 1000:.1f} ms | {old / new:.1f}x |")
    print(f"| journal bytes parsed by it | {journals / 1e6:.1f} MB (all) | {sum(parsed)} B (new lines) | - |")
    print(f"| first answer: fold every conversation | {first_fold * 1000:.0f} ms | 0 ms (none folded) | - |")


if __name__ == "__main__":
    main(sys.argv[1:])
