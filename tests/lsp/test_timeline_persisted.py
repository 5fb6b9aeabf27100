"""The persisted timeline cache through the real server: the first timeline answer writes
``<store>/cache/timeline.json``; the next server answers the same from it, and a journal that
changed while no server ran (a new turn) is read again, not hidden behind the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.e2e.seed_long import start
from tests.lsp.lsp_support import start_editor, stop_editor, validate

from retrace.app.timeline.persist import FILE_NAME
from retrace.engine import Engine
from retrace.engine.config import EngineConfig

pytestmark = pytest.mark.e2e

FIRST = {"outline": True, "maxRows": 500, "focus": None}


async def first_answer(ws: Path, store: Path) -> dict[str, Any]:
    editor = await start_editor(ws, store)
    try:
        result: dict[str, Any] = await editor.request("retrace/timeline/tree", FIRST)
        validate("#/$defs/TimelineTreeResult", result)
    finally:
        await stop_editor(editor)  # a write begun is finished before the server exits
    return result


def prompts(answer: dict[str, Any]) -> list[str]:
    return [i["prompt"] for s in answer["sessions"] for i in s["items"] if i["kind"] == "turn"]


@pytest.mark.timeout(300)
async def test_a_restarted_server_answers_from_the_persisted_cache(tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as engine:
        writer = start(engine, ws)
        for turn in range(1, 4):
            writer.turn(turn, 3, (turn - 1) * 3)
    cache = store / "cache" / FILE_NAME
    cold = await first_answer(ws, store)
    assert cache.exists(), "the first build wrote the cache"
    written = cache.stat().st_mtime_ns
    warm = await first_answer(ws, store)
    assert warm == cold
    assert cache.stat().st_mtime_ns == written, "nothing folded, nothing rewritten"

    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as engine:
        writer.engine = engine
        writer.turn(4, 3, 9)  # while no server runs: the file is behind the journal
    after = await first_answer(ws, store)
    assert prompts(after)[-1].startswith("Turn 4:")
    assert prompts(after)[:-1] == prompts(cold)
