"""The story builder, table-tested: where each checkpoint goes, what each row says, paging."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.journal_events import typed

from retrace.app.timeline import build_stories, describe, facts_from_events
from retrace.app.timeline.describe import edit_gist, first_difference
from retrace.app.timeline.facts import SessionFacts, ToolFact
from retrace.engine.models import Checkpoint, FileChange
from retrace.protocol.timeline import SessionStory, StoryRow, StoryTurn

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def facts_of(session_id: str, raw: Iterable[Mapping[str, Any]]) -> SessionFacts:
    """The facts of a journal given in wire form (as its reader would give it)."""
    return facts_from_events(session_id, typed(raw))


def at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def change(path: str, add: int = 1, rem: int = 1, status: str = "modified") -> FileChange:
    return FileChange.model_validate({"path": path, "status": status, "additions": add, "deletions": rem})


def cp(
    cid: str, minute: int, parent: str | None, session: str, kind: str = "tool", **extra: Any
) -> Checkpoint:
    return Checkpoint.model_validate(
        {"id": cid, "parent": parent, "sessionId": session, "kind": kind, "createdAt": at(minute), **extra}
    )


def turn_event(turn_id: str, text: str, minute: int) -> dict[str, Any]:
    return {"type": "turn", "turnId": turn_id, "text": text, "createdAt": at(minute).isoformat()}


def message(mid: str, parent: str | None, role: str, turn_id: str) -> dict[str, Any]:
    content = [{"type": "text", "text": mid}]
    return {
        "type": "message",
        "id": mid,
        "parent": parent,
        "role": role,
        "content": content,
        "turnId": turn_id,
    }


def tool_events(call_id: str, tool: str, tool_input: dict[str, Any], status: str, turn_id: str) -> list[Any]:
    return [
        {"type": "toolCallIntent", "id": call_id, "tool": tool, "input": tool_input, "turnId": turn_id},
        {"type": "toolCallResult", "id": call_id, "tool": tool, "status": status, "turnId": turn_id},
    ]


def rows_of(story: SessionStory) -> list[StoryRow]:
    out: list[StoryRow] = []
    for item in story.items:
        out.extend(item.rows if isinstance(item, StoryTurn) else [item])
    return out


def shape(story: SessionStory) -> list[Any]:
    """A story as nested ids: turns are (prompt, [row ids]), loose rows their id."""
    return [
        (i.prompt, [r.checkpoint.id for r in i.rows]) if isinstance(i, StoryTurn) else i.checkpoint.id
        for i in story.items
    ]


# --------------------------------------------------------------------------- a realistic store

AGENT = "ses_agent"
START1 = "eng_start1"  # the engine session of the first server start (baseline)
START2 = "eng_start2"  # the engine session of a later server start (external, safety)

EDIT = {"path": "scale.txt", "old_string": "a\nx = 1\nb", "new_string": "a\nx = 2\nb"}


def realistic() -> tuple[list[Checkpoint], dict[str, SessionFacts]]:
    checkpoints = [
        cp("base", 0, None, START1, "baseline", files=[change("scale.txt", 3, 0, "added")]),
        cp(
            "w1",
            2,
            "base",
            AGENT,
            tool="write_file",
            toolCallId="c1",
            turnId="t1",
            label="write_file: hello.txt",
            files=[change("hello.txt", 1, 0, "added")],
        ),
        cp(
            "e1",
            3,
            "w1",
            AGENT,
            tool="edit_file",
            toolCallId="c2",
            turnId="t1",
            label="edit_file: scale.txt",
            files=[change("scale.txt")],
        ),
        cp("x1", 10, "e1", START2, "external", label="external changes", files=[change("notes.md", 2, 0)]),
        cp("s1", 11, "x1", START2, "safety", label="before restore"),
        cp("r1", 11, "s1", AGENT, "restore", restoredFrom="w1", files=[change("scale.txt")]),
        cp(
            "e2",
            15,
            "r1",
            AGENT,
            tool="edit_file",
            toolCallId="c3",
            turnId="t3",
            label="edit_file: scale.txt",
            files=[change("scale.txt")],
        ),
    ]
    agent_events = [
        turn_event("t1", "first task: write hello", 1),
        message("m1", None, "user", "t1"),
        *tool_events("c1", "write_file", {"path": "hello.txt", "content": "hello\n"}, "ok", "t1"),
        *tool_events("c2", "edit_file", EDIT, "error", "t1"),
        message("m2", "m1", "assistant", "t1"),
        turn_event("t2", "second task", 5),
        message("m3", "m2", "user", "t2"),
        {
            "type": "conversationHead",
            "head": "m1",
            "reason": "restore",
            "checkpointId": "w1",
            "noteFrom": None,
        },
        turn_event("t3", "third task", 14),
        message("m4", "m1", "user", "t3"),
        *tool_events("c3", "edit_file", EDIT, "ok", "t3"),
    ]
    facts = {
        AGENT: facts_of(AGENT, agent_events),
        START1: facts_of(START1, []),
        START2: facts_of(START2, []),
    }
    return checkpoints, facts


def test_one_chronological_story_per_agent_session_with_restores_in_place() -> None:
    checkpoints, facts = realistic()
    stories = build_stories(checkpoints, "e2", facts)
    assert [s.workspace for s in stories] == [True, False]
    workspace, agent = stories
    assert workspace.session.title == "" and shape(workspace) == ["base"]
    # External changes, the safety capture and the restore happened while working on AGENT's story.
    assert shape(agent) == [
        ("first task: write hello", ["w1", "e1"]),
        ("second task", []),
        "x1",
        "s1",
        "r1",
        ("third task", ["e2"]),
    ]
    assert agent.session.id == AGENT and agent.turn_count == 3 and agent.row_count == 6
    assert agent.session.created_at == at(1)


def test_session_title_is_the_first_prompt_and_turns_are_numbered() -> None:
    checkpoints, facts = realistic()
    agent = build_stories(checkpoints, "e2", facts)[1]
    turns = [i for i in agent.items if isinstance(i, StoryTurn)]
    assert [t.number for t in turns] == [1, 2, 3]
    assert agent.session.title == "first task: write hello"


def test_abandoned_turns_keep_their_prompts_and_forks_are_named() -> None:
    checkpoints, facts = realistic()
    agent = build_stories(checkpoints, "e2", facts)[1]
    turns = {i.prompt: i for i in agent.items if isinstance(i, StoryTurn)}
    assert turns["second task"].abandoned is True
    assert turns["first task: write hello"].abandoned is False
    assert turns["third task"].abandoned is False
    assert turns["third task"].forked_from == "w1"
    assert turns["second task"].forked_from is None


def test_rows_say_what_happened() -> None:
    checkpoints, facts = realistic()
    rows = {r.checkpoint.id: r for s in build_stories(checkpoints, "e2", facts) for r in rows_of(s)}
    assert (rows["e1"].title, rows["e1"].summary) == ("edit_file: scale.txt", "‘x = 1’ → ‘x = 2’ · +1 −1")
    assert rows["e1"].tool_status == "error" and rows["e2"].tool_status == "ok"
    assert rows["w1"].summary == "new file, 1 line: ‘hello’"
    assert (rows["r1"].title, rows["r1"].branch) == ("Restored code to ‘write_file: hello.txt’", True)
    assert rows["r1"].summary == "back to new file, 1 line: ‘hello’ · scale.txt +1 −1"
    assert rows["x1"].title == "External changes" and rows["x1"].summary == "notes.md +2 −0"
    assert rows["s1"].title == "Before restore"
    assert rows["base"].summary == "1 file" and rows["base"].title == "Starting point"
    assert [r.is_head for r in rows.values()].count(True) == 1 and rows["e2"].is_head


def test_workspace_story_merges_every_engine_only_session() -> None:
    checkpoints = [
        cp("b", 0, None, "eng1", "baseline"),
        cp("x", 1, "b", "eng2", "external", files=[change("a")]),
        cp("y", 2, "x", "eng3", "external", files=[change("b")]),
    ]
    facts = {sid: facts_of(sid, []) for sid in ("eng1", "eng2", "eng3")}
    [story] = build_stories(checkpoints, "y", facts)
    assert story.workspace and shape(story) == ["b", "x", "y"] and story.session.id == "eng1"


@pytest.mark.parametrize(
    ("max_rows", "expected", "omitted"),
    [
        (
            100,
            [
                ("first task: write hello", ["w1", "e1"]),
                ("second task", []),
                "x1",
                "s1",
                "r1",
                ("third task", ["e2"]),
            ],
            0,
        ),
        (4, ["x1", "s1", "r1", ("third task", ["e2"])], 2),
        (
            5,
            [
                ("first task: write hello", ["e1"]),
                ("second task", []),
                "x1",
                "s1",
                "r1",
                ("third task", ["e2"]),
            ],
            1,
        ),
        (1, [("third task", ["e2"])], 5),
    ],
)
def test_paging_keeps_the_newest_rows(max_rows: int, expected: list[Any], omitted: int) -> None:
    checkpoints, facts = realistic()
    agent = build_stories(checkpoints, "e2", facts, max_rows=max_rows, only=AGENT)[0]
    assert shape(agent) == expected
    assert agent.rows_omitted == omitted and agent.row_count == 6


def test_rows_leave_the_editor_state_out() -> None:
    big = cp("a", 0, None, AGENT, tool="edit_file", turnId="t1", editorState={"openEditors": ["x" * 1000]})
    facts = {AGENT: facts_of(AGENT, [turn_event("t1", "p", 0)])}
    [story] = build_stories([big], "a", facts)
    assert rows_of(story)[0].checkpoint.editor_state is None and big.editor_state is not None


def test_only_and_running() -> None:
    checkpoints, facts = realistic()
    [agent] = build_stories(checkpoints, "e2", facts, only=AGENT, running=frozenset({AGENT}))
    assert agent.session.running is True
    assert build_stories(checkpoints, "e2", facts, only="nope") == []


def test_a_row_of_a_turn_the_journal_does_not_name_still_shows() -> None:
    checkpoints = [cp("a", 1, None, AGENT, tool="read_file", turnId="ghost")]
    facts = {AGENT: facts_of(AGENT, [turn_event("t1", "hi", 0)])}
    [story] = build_stories(checkpoints, "a", facts)
    assert shape(story) == [("hi", []), ("", ["a"])]


@pytest.mark.parametrize(
    ("tool_input", "gist"),
    [
        ({"old_string": "x = 1", "new_string": "x = 2"}, "‘x = 1’ → ‘x = 2’"),
        ({"old_string": "a\nb\n", "new_string": "a\nb\nc\n"}, "+ ‘c’"),
        ({"old_string": "a\nb\nc", "new_string": "a\nc"}, "− ‘b’"),
        ({"old_string": "a ", "new_string": "a  "}, "‘a’ → ‘a’"),
        ({"old_string": "  ", "new_string": "\t"}, "whitespace only"),
        ({"old_string": "q" * 80, "new_string": "r"}, f"‘{'q' * 31}…’ → ‘r’"),
        ({"path": "x"}, ""),
    ],
)
def test_edit_gist(tool_input: dict[str, Any], gist: str) -> None:
    assert edit_gist(tool_input) == gist


def test_describe_without_journal_facts_falls_back_to_the_label() -> None:
    row = cp("a", 0, None, "s", tool="run_command", label="run_command: make test\nmore")
    assert describe(row, None, {}) == ("run_command: make test", "no file changes")
    restore = cp(
        "r", 0, "a", "s", "restore", restoredFrom="0123456789abcdef", label="restore 0123456789abcdef"
    )
    assert describe(restore, None, {})[0] == "Restored code to 0123456789ab"
    earlier = {"0123456789abcdef": ("edit_file: a.py", "‘x = 1’ → ‘x = 2’ · +1 −1")}
    assert describe(restore, None, earlier) == (
        "Restored code to ‘edit_file: a.py’",
        "back to ‘x = 1’ → ‘x = 2’",
    )
    safety = cp("s", 0, "a", "s", "safety", label="before restore 0123")
    assert describe(safety, None, {}) == ("Before restore", "the workspace as it was")
    tool = ToolFact("c", "run_command", {"command": "x"}, "ok")
    many = cp("m", 0, None, "s", tool="run_command", files=[change(f"f{i}") for i in range(5)])
    assert describe(many, tool, {}) == ("run_command", "5 files +5 −5")
    background = cp("b", 0, "a", "s", "background", label="background: npm run dev", files=[change("a.txt")])
    assert describe(background, None, {}) == ("background: npm run dev", "a.txt +1 −1")
    assert describe(cp("b2", 0, "a", "s", "background"), None, {})[0] == "Background command"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \n", max_size=6), max_size=6),
    st.lists(st.text(alphabet="ab \n", max_size=6)),
)
def test_first_difference_keeps_only_what_changed(old_lines: list[str], new_lines: list[str]) -> None:
    old, new = "\n".join(old_lines), "\n".join(new_lines)
    old_part, new_part = first_difference(old, new)
    assert old_part in old and new_part in new
    if old.splitlines() == new.splitlines():
        assert old_part == new_part == ""


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_checkpoint_appears_exactly_once_in_commit_order(data: st.DataObject) -> None:
    """Random stores: every row is shown once, rows inside a turn keep commit order, paging omits
    exactly the overflow."""
    sessions = ["agent_a", "agent_b", "eng_1", "eng_2"]
    kinds = ["tool", "external", "safety", "restore", "manual"]
    count = data.draw(st.integers(0, 30))
    checkpoints: list[Checkpoint] = []
    for i in range(count):
        session = data.draw(st.sampled_from(sessions))
        kind = data.draw(st.sampled_from(kinds)) if session.startswith("agent") else "external"
        parent = checkpoints[data.draw(st.integers(0, i - 1))].id if i else None
        turn = f"{session}-t{data.draw(st.integers(0, 2))}" if kind == "tool" else None
        checkpoints.append(cp(f"c{i}", i, parent, session, kind, turnId=turn, tool="edit_file"))
    facts = {
        s: facts_of(s, [turn_event(f"{s}-t{n}", f"p{n}", n) for n in range(2)] if s < "b" else [])
        for s in sessions
    }
    max_rows = data.draw(st.integers(1, 40))
    stories = build_stories(checkpoints, None, facts, max_rows=max_rows)
    shown = [r.checkpoint.id for s in stories for r in rows_of(s)]
    assert len(shown) == len(set(shown))
    assert sum(s.row_count for s in stories) == count
    assert sum(s.rows_omitted for s in stories) == count - len(shown)
    for story in stories:
        assert len(rows_of(story)) == min(story.row_count, max_rows)
        for item in story.items:
            if isinstance(item, StoryTurn):
                order = [int(r.checkpoint.id[1:]) for r in item.rows]
                assert order == sorted(order)
