"""Timeline at scale, inside the server's process: the cost of the first tree answer (cold: every
journal read and every checkpoint described; warm: one page from the cache), an older page, a
filter, one hover preview (the server's work for ``retrace/checkpoint/diff`` from a row's parent to
the row: file list, unified diff, truncation; without the JSON-RPC hop and the workbench's own
hover delay) on rows spread over the whole session, and one tool call's update (append + its
didChange), on the cached 10,000-step session of ``tests/e2e/seed_long.py`` (generated once per
machine).

``python -m bench.timeline_pages [--turns 500] [--steps 20] [--repeat 20]`` prints p50/p95 per
interaction and the ratio of the cold build to a warm page. Not part of the test run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.e2e.seed_long import cached, copy_to, start

from retrace.app.timeline import TimelineCache, select
from retrace.engine import Engine
from retrace.protocol.models import DiffParams
from retrace.protocol.timeline import TimelineFilter, TimelineTreeParams, TimelineTreeResult
from retrace.text import truncate_utf8_lines as truncate_patch


def _ms(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _line(name: str, samples: list[float]) -> str:
    p95 = sorted(samples)[max(0, int(len(samples) * 0.95) - 1)]
    return f"{name:<34} p50 {statistics.median(samples):8.1f} ms   p95 {p95:8.1f} ms   (n={len(samples)})"


PATCH_BYTES: int = DiffParams.model_fields["max_patch_bytes"].default


def _hover_samples(engine: Engine, count: int) -> list[float]:
    """ms per hover preview: what the ``retrace/checkpoint/diff`` handler does for a row (its
    parent → it, the patch cut at the handler's default size), on tool rows picked at random
    over the whole session (old rows are as likely as new ones)."""
    rows = [c for c in engine.timeline() if c.kind == "tool" and c.parent is not None]
    picked = random.Random(7).sample(rows, min(count, len(rows)))
    out: list[float] = []
    for cp in picked:
        assert cp.parent is not None
        t = time.perf_counter()
        engine.diff(cp.parent, cp.id)
        truncate_patch(
            engine.unified_diff(cp.parent, cp.id, None), DiffParams.model_fields["max_patch_bytes"].default
        )
        out.append((time.perf_counter() - t) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="retrace-bench-timeline-"))
    try:
        seed = copy_to(cached(args.turns, args.steps), scratch / "ws", scratch / "store")
        with Engine.open(scratch / "ws", scratch / "store") as engine:
            cache = TimelineCache()
            t = time.perf_counter()
            pages = cache.stories(engine)
            cold = (time.perf_counter() - t) * 1000

            def answer(params: TimelineTreeParams) -> str:
                stories = select(list(cache.stories(engine).values()), params)
                result = TimelineTreeResult(sessions=stories, head=engine.head.id)
                return result.model_dump_json(by_alias=True)

            first = TimelineTreeParams(outline=True, max_rows=500)
            size = len(answer(first))
            cursor = pages[seed["sessionId"]].page(500).next_before
            older = TimelineTreeParams(session_id=seed["sessionId"], before=cursor, max_rows=500)
            by_tool = TimelineTreeParams(filter=TimelineFilter(tool="write_file"), max_rows=500)
            by_text = TimelineTreeParams(filter=TimelineFilter(text="batch 17 "), max_rows=500)
            warm = _ms(lambda: answer(first), args.repeat)
            hover = _hover_samples(engine, args.repeat * 5)
            rows = [
                f"{seed['checkpoints']} checkpoints; first answer {size / 1024:.0f} KiB",
                f"{'cold build (first answer)':<34} {cold:8.1f} ms",
                _line("first answer, warm (outline+page)", warm),
                _line("older page", _ms(lambda: answer(older), args.repeat)),
                _line("filter by tool", _ms(lambda: answer(by_tool), args.repeat)),
                _line("filter by text", _ms(lambda: answer(by_text), args.repeat)),
                _line("hover preview (diff of one row)", hover),
            ]
            writer = start(engine, engine.workspace)
            calls: list[float] = []
            writer.on_turn = lambda turn_id, prompt, at: cache.note_turn(writer.sid, turn_id, prompt, at)
            for turn in range(1, 4):
                writer.turn(turn, 5, turn * 5)
                t = time.perf_counter()
                cache.change(engine, engine.timeline()[-1], lambda _s, _c: None)
                calls.append((time.perf_counter() - t) * 1000)
            rows.append(_line("update after a tool call", calls))
            rows.append(f"full builds: {cache.builds} (1 = every update was in place)")
            rows.append(f"ratio cold build / warm first answer: {cold / statistics.median(warm):.0f}x")
        print("\n".join(rows))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
