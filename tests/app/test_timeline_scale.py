"""A 500-step session from a real store: one story, 25 turns with their prompts, 500 rows that can
be told apart, the restore in place. How long the tree takes is a benchmark, not an assertion here
(``python -m bench.timeline_pages``: cold build and warm pages side by side, on 10,000 steps)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.seed_story import seed

from retrace.app.timeline import build_stories, facts_from_events
from retrace.engine import Engine
from retrace.protocol.timeline import StoryRow, StoryTurn, TimelineTreeResult


def test_500_step_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with Engine.open(workspace, tmp_path / "store") as engine:
        sid, created = seed(engine, workspace, turns=25, steps=20)
        t0 = time.perf_counter()
        facts = {s: facts_from_events(s, engine.events(s)) for s in engine.sessions()}
        stories = build_stories(engine.timeline(), engine.head.id, facts)
        payload = TimelineTreeResult(sessions=stories, head=engine.head.id).model_dump_json(by_alias=True)
        elapsed = time.perf_counter() - t0
    print(f"500-step tree: {elapsed * 1000:.0f} ms, {len(payload) / 1024:.0f} KiB")
    [story] = [s for s in stories if not s.workspace]
    assert story.session.id == sid and story.turn_count == 25
    turns = [i for i in story.items if isinstance(i, StoryTurn)]
    assert [t.prompt.split(":")[0] for t in turns] == [f"Turn {n}" for n in range(1, 26)]
    rows = [r for t in turns for r in t.rows]
    assert [r.checkpoint.id for r in rows] == created
    assert len({r.summary for r in rows}) > 400, "rows must be told apart by their gist"
    assert rows[0].summary == "‘x0 = 0’ → ‘x0 = 1’ · +1 −1"
    [restore] = [i for i in story.items if isinstance(i, StoryRow) and i.checkpoint.kind == "restore"]
    assert restore.title == "Restored code to ‘edit_file: scale.txt’" and restore.is_head
    assert restore.summary.startswith("back to ‘x0 = 25’ → ‘x0 = 26’ · scale.txt +10 −10")
    assert story.items[-1] is restore
