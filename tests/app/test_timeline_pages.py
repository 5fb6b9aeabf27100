"""Pages of the timeline over a real store: walking ``nextBefore`` gives back every row once, in
order; filters by tool, path and text; outlines; the cache updated in place (new turns, tool
calls, a restore and its head move) equals a fresh build, without rebuilding."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.e2e.seed_long import start

from retrace.app.timeline import StoryPages, TimelineCache, ToolFact, UnknownCursorError, select
from retrace.app.timeline import pages as pages_module
from retrace.app.timeline.cache import ALL_ROWS
from retrace.engine import Engine
from retrace.protocol.timeline import SessionStory, StoryRow, StoryTurn, TimelineFilter, TimelineTreeParams

TURNS, STEPS = 6, 5


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with Engine.open(workspace, tmp_path / "store") as opened:
        yield opened


def rows_of(story: SessionStory) -> list[StoryRow]:
    return [r for i in story.items for r in (i.rows if isinstance(i, StoryTurn) else [i])]


def seeded(engine: Engine) -> tuple[str, dict[str, StoryPages]]:
    writer = start(engine, engine.workspace)
    for turn in range(1, TURNS + 1):
        writer.turn(turn, STEPS, (turn - 1) * STEPS)
    return writer.sid, TimelineCache().stories(engine)


def test_walking_pages_returns_every_row_once_in_order(engine: Engine) -> None:
    sid, pages = seeded(engine)
    story = pages[sid]
    everything = rows_of(story.page(ALL_ROWS))
    assert len(everything) == TURNS * STEPS == story.story.row_count
    walked: list[StoryRow] = []
    before: str | None = None
    omitted = []
    while True:
        page = story.page(7, before)
        assert len(rows_of(page)) <= 7
        walked[:0] = rows_of(page)
        omitted.append(page.rows_omitted)
        turn_ids = [i.turn_id for i in page.items if isinstance(i, StoryTurn)]
        assert len(turn_ids) == len(set(turn_ids)), "a turn appears once per page"
        before = page.next_before
        if before is None:
            break
    assert [r.checkpoint.id for r in walked] == [r.checkpoint.id for r in everything]
    assert omitted == [23, 16, 9, 2, 0]
    with pytest.raises(KeyError):
        story.page(7, "no-such-cursor")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (TimelineFilter(tool="run_command"), lambda r, _t: r.checkpoint.tool == "run_command"),
        (TimelineFilter(path="docs/"), lambda r, _t: r.checkpoint.files[0].path.startswith("docs/")),
        (TimelineFilter(text="BATCH 3 "), lambda _r, t: t is not None and t.number == 3),
        (TimelineFilter(text="value_7 = "), lambda r, _t: "value_7 = " in r.summary),
        (TimelineFilter(tool="edit_file", path="mod_1"), lambda r, _t: "mod_1" in r.checkpoint.files[0].path),
        (TimelineFilter(tool="no_such_tool"), lambda _r, _t: False),
    ],
)
def test_filter_pages_hold_exactly_the_matching_rows(
    engine: Engine, spec: TimelineFilter, expected: Callable[[StoryRow, StoryTurn | None], bool]
) -> None:
    sid, pages = seeded(engine)
    full = pages[sid].page(ALL_ROWS)
    pairs = [
        (r, i if isinstance(i, StoryTurn) else None)
        for i in full.items
        for r in (i.rows if isinstance(i, StoryTurn) else [i])
    ]
    want = [r.checkpoint.id for r, t in pairs if expected(r, t)]
    stories = select(list(pages.values()), TimelineTreeParams(filter=spec, max_rows=3))
    if not want:
        assert stories == []
        return
    [story] = stories
    assert story.row_count == len(want)
    got = [r.checkpoint.id for r in rows_of(story)]
    while story.next_before is not None:
        params = TimelineTreeParams(session_id=sid, filter=spec, max_rows=3, before=story.next_before)
        [story] = select(list(pages.values()), params)
        got[:0] = [r.checkpoint.id for r in rows_of(story)]
    assert got == want


def test_outline_pages_only_the_focus(engine: Engine) -> None:
    start(engine, engine.workspace).turn(1, 2, 0)  # an older session
    sid, pages = seeded(engine)
    stories = select(list(pages.values()), TimelineTreeParams(outline=True, max_rows=4), frozenset({sid}))
    by_id = {s.session.id: s for s in stories}
    assert by_id[sid].outline is False and len(rows_of(by_id[sid])) == 4 and by_id[sid].session.running
    others = [s for s in stories if s.session.id != sid and not s.workspace]
    assert others and all(s.outline and s.items == [] and s.rows_omitted == s.row_count for s in others)
    workspace = next(s.session.id for s in stories if s.workspace)
    for focus in ("ses_without_story", workspace):
        chosen = select(list(pages.values()), TimelineTreeParams(outline=True, focus=focus))
        assert [s.session.id for s in chosen if not s.outline] == [workspace, sid], (
            f"focus {focus} falls back"
        )
    with pytest.raises(UnknownCursorError):
        select(list(pages.values()), TimelineTreeParams(session_id=sid, before="nope"))


def test_outline_keeps_a_small_workspace_story_in_sight(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace story (the baseline, changes made outside a session) is paged in an outline
    beside the focus while it is small: whatever session is in focus, and whenever the client asks,
    the baseline a user may want to go back to is a row, not a collapsed node."""
    writer = start(engine, engine.workspace)
    writer.turn(1, STEPS, 0)
    pages = TimelineCache().stories(engine)
    stories = select(list(pages.values()), TimelineTreeParams(outline=True, focus=writer.sid, max_rows=4))
    workspace = next(s for s in stories if s.workspace)
    assert not workspace.outline and rows_of(workspace)[0].checkpoint.kind == "baseline"
    assert [s.session.id for s in stories if not s.outline] == [workspace.session.id, writer.sid]
    monkeypatch.setattr(pages_module, "WORKSPACE_IN_SIGHT", workspace.row_count - 1)  # a grown one
    grown = select(list(pages.values()), TimelineTreeParams(outline=True, focus=writer.sid, max_rows=4))
    assert [s.session.id for s in grown if not s.outline] == [writer.sid]


def dump(pages: dict[str, StoryPages]) -> list[str]:
    return [p.page(ALL_ROWS).model_dump_json() for p in pages.values()]


def test_updates_in_place_equal_a_fresh_build(engine: Engine) -> None:
    writer = start(engine, engine.workspace)
    cache = TimelineCache()
    writer.turn(1, STEPS, 0)
    cache.stories(engine)
    assert cache.builds == 1 and cache.ready
    writer.on_turn = lambda turn_id, prompt, at: cache.note_turn(writer.sid, turn_id, prompt, at)

    def tool_of(_session: str, call_id: str) -> ToolFact | None:  # the agent's replay buffer
        tool, tool_input = writer.calls[call_id]
        return ToolFact(call_id, tool, tool_input, "ok")

    for turn in range(2, 5):
        writer.turn(turn, STEPS, (turn - 1) * STEPS)
        cache.stories(engine, tool_of)  # a page asked for between turns
    first = engine.timeline()[3]
    engine.restore(first.id)  # a safety checkpoint, a restore, the head moves back
    writer.turn(5, STEPS, 4 * STEPS)
    other = start(engine, engine.workspace)  # a second session begins
    other.on_turn = lambda turn_id, prompt, at: cache.note_turn(other.sid, turn_id, prompt, at)
    other.turn(1, 2, 0)
    writer.calls.update(other.calls)
    change = cache.change(engine, engine.timeline()[-1], tool_of)
    assert cache.builds == 1, "tool calls, new turns, a new session and a restore are appended, not rebuilt"
    assert change is not None and change.story_id == other.sid and change.turn is not None
    assert change.turn.number == 1 and change.row is not None and change.row.is_head
    fresh = TimelineCache()
    assert dump(cache.stories(engine)) == dump(fresh.stories(engine))
    restore = [r for r in rows_of(fresh.stories(engine)[writer.sid].page(ALL_ROWS)) if r.branch]
    assert restore and restore[0].title.startswith("Restored code to ‘edit_file")


@pytest.mark.parametrize(
    ("running", "expect"),
    [
        ("none", {"seeded": False}),
        ("seeded", {"seeded": True}),
        ("new", {"seeded": False, "ses_new": True}),
        ("both", {"seeded": True, "ses_new": True}),
    ],
)
def test_session_list_marks_running_and_lists_a_session_still_starting(
    engine: Engine, running: str, expect: dict[str, bool]
) -> None:
    """A turn runs from the moment its prompt is answered; a new session's has not written its
    first journal line yet. The list must still say something runs, or a client waiting for
    "nothing runs" sends its next prompt into a running session."""
    sid, pages = seeded(engine)
    ids = {"none": set(), "seeded": {sid}, "new": {"ses_new"}, "both": {sid, "ses_new"}}[running]
    listed = pages_module.session_list(list(pages.values()), frozenset(ids), datetime.now(UTC))
    by_id = {i.id: i.running for i in listed}
    named = {("seeded" if k == sid else k): v for k, v in by_id.items() if k == sid or k == "ses_new"}
    assert named == expect
    assert [i.id for i in listed][: len(pages)] == [p.story.session.id for p in pages.values()]
