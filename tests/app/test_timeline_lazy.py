"""The cache's lazy build (rows kept as seeds, made per page) answers exactly what the eager build
(every row made) answers: for random stores, every page walked with ``nextBefore``, filtered
pages, outlines, a row looked up by id and a head moved; and a page makes only its own rows."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.app.test_timeline_story import change, cp, tool_events, turn_event
from tests.journal_events import typed

from retrace.app.timeline import StoryPages, build_stories, facts_from_events, select
from retrace.app.timeline import story as story_module
from retrace.app.timeline.cache import ALL_ROWS
from retrace.app.timeline.story import story_items
from retrace.engine.models import Checkpoint
from retrace.protocol.timeline import SessionStory, TimelineFilter, TimelineTreeParams

SESSIONS = ["agent_a", "agent_b", "eng_1", "eng_2"]
KINDS = ["tool", "external", "safety", "restore", "manual"]
TOOLS = ["edit_file", "write_file", "run_command"]


def random_store(data: st.DataObject) -> tuple[list[Checkpoint], dict[str, Any], str | None]:
    count = data.draw(st.integers(0, 40), label="count")
    checkpoints: list[Checkpoint] = []
    for i in range(count):
        session = data.draw(st.sampled_from(SESSIONS))
        kind = data.draw(st.sampled_from(KINDS)) if session.startswith("agent") else "external"
        parent = checkpoints[data.draw(st.integers(0, i - 1))].id if i else None
        extra: dict[str, Any] = {"label": f"{kind} {i}", "files": [change(f"f{i % 5}.py", i % 3, i % 2)]}
        if kind == "tool":
            extra |= {
                "turnId": f"{session}-t{data.draw(st.integers(0, 3))}",
                "tool": data.draw(st.sampled_from(TOOLS)),
                "toolCallId": f"call{i}",
            }
        if kind == "restore" and checkpoints:
            extra["restoredFrom"] = checkpoints[data.draw(st.integers(0, i - 1))].id
        if data.draw(st.booleans()):
            extra["editorState"] = {"openEditors": [f"e{i}"]}
        minute = data.draw(st.integers(0, 50))
        checkpoints.append(cp(f"c{i}", minute, parent, session, kind, **extra))
    facts = {}
    for s in SESSIONS:
        events: list[Any] = []
        if s.startswith("agent"):
            events = [turn_event(f"{s}-t{n}", f"prompt {n} of {s}", n * 7) for n in range(3)]
            for c in checkpoints:
                if c.session_id == s and c.tool_call_id:
                    edit = {"old_string": "a = 1", "new_string": f"a = {c.id}"}
                    events += tool_events(c.tool_call_id, c.tool or "", edit, "ok", c.turn_id or "")
        facts[s] = facts_from_events(s, typed(events))
    head = checkpoints[data.draw(st.integers(0, count - 1))].id if count else None
    return checkpoints, facts, head


def both(
    checkpoints: list[Checkpoint], facts: dict[str, Any], head: str | None
) -> tuple[list[StoryPages], ...]:
    eager = [StoryPages(s) for s in build_stories(checkpoints, head, facts, max_rows=ALL_ROWS)]
    lazy = [StoryPages(header, items) for header, items in story_items(checkpoints, head, facts)]
    return eager, lazy


def dumped(stories: list[SessionStory]) -> list[Any]:
    return [s.model_dump(by_alias=True) for s in stories]


def walk(pages: StoryPages, size: int) -> list[Any]:
    out, before = [], None
    while True:
        page = pages.page(size, before)
        out.append(page.model_dump(by_alias=True))
        before = page.next_before
        if before is None:
            return out


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_the_lazy_build_pages_like_the_eager_build(data: st.DataObject) -> None:
    checkpoints, facts, head = random_store(data)
    eager, lazy = both(checkpoints, facts, head)
    assert [p.story for p in eager] == [p.story for p in lazy]  # headers: sessions, counts
    size = data.draw(st.integers(1, 12), label="page size")
    for e, z in zip(eager, lazy, strict=True):
        assert walk(e, size) == walk(z, size)
        assert e.outline() == z.outline()
    for params in (
        TimelineTreeParams(outline=True, max_rows=size),
        TimelineTreeParams(max_rows=size, filter=TimelineFilter(tool="edit_file")),
        TimelineTreeParams(max_rows=size, filter=TimelineFilter(text="prompt 1")),
        TimelineTreeParams(max_rows=size, filter=TimelineFilter(path="f3")),
    ):
        running = frozenset({"agent_b"})
        assert dumped(select(eager, params, running)) == dumped(select(lazy, params, running))
    for c in checkpoints:
        found = [p.entry(c.id) for p in eager if p.has(c.id)], [p.entry(c.id) for p in lazy if p.has(c.id)]
        assert found[0] == found[1] and len(found[0]) == 1
    if checkpoints:  # the head moves to another row, in both
        target = checkpoints[data.draw(st.integers(0, len(checkpoints) - 1))].id
        for pages in (eager, lazy):
            for p in pages:
                if head is not None:
                    p.set_head(head, False)
                p.set_head(target, True)
        for e, z in zip(eager, lazy, strict=True):
            assert walk(e, size) == walk(z, size)


def test_a_page_makes_only_its_own_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    original = story_module.RowSeed.row

    def counted(seed: story_module.RowSeed) -> Any:
        made.append(seed.checkpoint.id)
        return original(seed)

    monkeypatch.setattr(story_module.RowSeed, "row", counted)
    events = [turn_event(f"t{n}", f"prompt {n}", n) for n in range(20)]
    facts = {"agent": facts_from_events("agent", typed(events))}
    checkpoints = [
        cp(f"c{i}", i // 10, None, "agent", turnId=f"t{i // 10}", tool="edit_file") for i in range(200)
    ]
    [(header, items)] = story_items(checkpoints, None, facts)
    pages = StoryPages(header, items)
    assert made == [] and pages.story.row_count == 200
    page = pages.page(15)
    assert made == [f"c{i}" for i in range(185, 200)]
    assert page.rows_omitted == 185
