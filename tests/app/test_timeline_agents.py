"""Other agents' sessions in the timeline (Claude Code, Gemini CLI, recorded through hooks): each is
a story of its own labelled with its agent, side by side with Retrace's sessions in time order;
turns titled by their prompts, rows by tool and input summary, no conversation restore offered;
the turn-state rule (running / ended / interrupted, bounded by the idle limit) table-tested; and
over a real store, a new agent session's first checkpoint makes a new story live, a turn's end
is seen without any announcement, and the persisted cache keeps it all."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.journal_events import typed

from retrace.app.timeline import StoryPages, TimelineCache, build_stories, facts_from_events, select
from retrace.app.timeline.agents import (
    IDLE_LIMIT,
    ExternalSession,
    agent_title,
    conversation_reason,
    external_session,
    running_turns,
    turn_state,
)
from retrace.app.timeline.cache import ALL_ROWS
from retrace.app.timeline.facts import SessionFacts
from retrace.app.timeline.persist import FILE_NAME
from retrace.app.timeline.story import story_items
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.models import Checkpoint, FileChange
from retrace.engine.store.events import AgentSessionEvent, TurnEndEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout
from retrace.protocol.timeline import SessionStory, StoryRow, StoryTurn, TimelineTreeParams

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def facts_of(session_id: str, raw: Iterable[Mapping[str, Any]]) -> SessionFacts:
    """The facts of a journal given in wire form (as its reader would give it)."""
    return facts_from_events(session_id, typed(raw))


def external_of(raw: Iterable[Mapping[str, Any]]) -> ExternalSession | None:
    return external_session(typed(raw))


def at(minute: float) -> datetime:
    return T0 + timedelta(minutes=minute)


def ts(minute: float) -> float:
    return at(minute).timestamp()


# --------------------------------------------------------------------------- the pure rules


@pytest.mark.parametrize(
    ("ended", "latest", "idle_min", "expected"),
    [
        (True, True, 0, "ended"),
        (True, False, 0, "ended"),
        (True, True, 600, "ended"),
        (False, True, 0, "running"),
        (False, True, 29.9, "running"),
        (False, True, 30, "running"),  # the limit itself still counts as alive
        (False, True, 30.1, "interrupted"),  # an agent that died mid-turn
        (False, True, 24 * 60, "interrupted"),
        (False, False, 0, "interrupted"),  # a later prompt came without a Stop (user interrupt)
        (False, True, None, "interrupted"),  # no sign of life known at all
    ],
)
def test_turn_state_rule(ended: bool, latest: bool, idle_min: float | None, expected: str) -> None:
    now = at(1000)
    last = None if idle_min is None else now - timedelta(minutes=idle_min)
    assert turn_state(ended=ended, latest=latest, last_activity=last, now=now) == expected
    assert timedelta(minutes=30) == IDLE_LIMIT


@pytest.mark.parametrize(
    ("agent", "title"),
    [("claude-code", "Claude Code"), ("gemini-cli", "Gemini CLI"), ("my-agent", "My Agent"), ("x", "X")],
)
def test_agent_titles(agent: str, title: str) -> None:
    assert agent_title(agent) == title
    assert conversation_reason(agent).startswith(f"{title} keeps its own conversation")


def test_external_session_fold_needs_agent_session_first() -> None:
    own = [{"type": "turn", "turnId": "t1", "text": "hi", "ts": ts(0)}]
    assert external_of(own) is None
    late = [*own, {"type": "agentSession", "agent": "claude-code", "externalSessionId": "x", "ts": ts(1)}]
    assert external_of(late) is None  # only a FIRST line makes a session another agent's
    assert external_of([]) is None
    events = [
        {"type": "agentSession", "agent": "claude-code", "externalSessionId": "x", "ts": ts(0)},
        {"type": "turn", "turnId": "t1", "text": "one", "ts": ts(1)},
        {"type": "turn", "turnId": "t1", "text": "repeated", "ts": ts(1)},
        {"type": "turnEnd", "turnId": "t1", "ts": ts(2)},
        {"type": "turn", "turnId": "t2", "text": "two", "ts": ts(3)},
        {"type": "turnEnd", "turnId": 7, "ts": ts(4)},  # malformed: damage, no reader yields it
        {"type": "usage", "inputTokens": 1, "ts": ts(4)},  # not a turn, still a sign of life
    ]
    session = external_of(events)
    assert session is not None
    assert session.agent == "claude-code"
    assert [t[:2] for t in session.turns] == [("t1", "one"), ("t2", "two")]
    assert session.ended == {"t1"}
    assert session.last_event_at == at(4)


# --------------------------------------------------------------------------- stories (pure)

RETRACE = "ses_retrace"
CLAUDE = "claude-code-abc123"
GEMINI = "gemini-cli-def456"
START = "eng_start"


def change(path: str, status: str = "modified") -> FileChange:
    return FileChange.model_validate({"path": path, "status": status, "additions": 1, "deletions": 0})


def cp(
    cid: str, minute: float, parent: str | None, session: str, kind: str = "tool", **extra: Any
) -> Checkpoint:
    return Checkpoint.model_validate(
        {"id": cid, "parent": parent, "sessionId": session, "kind": kind, "createdAt": at(minute), **extra}
    )


def agent_events(agent: str, turns: list[tuple[str, str, float, float | None]]) -> list[dict[str, Any]]:
    """An external session's journal (checkpoints aside): (turn id, prompt, began, ended or None)."""
    events: list[dict[str, Any]] = [
        {
            "type": "agentSession",
            "agent": agent,
            "externalSessionId": "ext",
            "ts": ts(turns[0][2] - 0.1 if turns else 0),
        }
    ]
    for turn_id, prompt, began, ended in turns:
        events.append({"type": "turn", "turnId": turn_id, "text": prompt, "ts": ts(began)})
        if ended is not None:
            events.append({"type": "turnEnd", "turnId": turn_id, "reason": "stop", "ts": ts(ended)})
    return events


def mixed() -> tuple[list[Checkpoint], dict[str, Any]]:
    """Retrace's own session at minute 1, Claude Code's at minute 5 (two turns, the first
    interrupted by a later prompt), Gemini CLI's at minute 20 (one turn, still open)."""
    checkpoints = [
        cp("base", 0, None, START, "baseline", files=[change("a.txt", "added")]),
        cp(
            "r1",
            2,
            "base",
            RETRACE,
            tool="write_file",
            toolCallId="c1",
            turnId="t1",
            label="write_file: b.txt",
        ),
        cp("x1", 5.5, "r1", CLAUDE, "external", turnId="ct1", files=[change("a.txt")]),
        cp(
            "w1",
            6,
            "x1",
            CLAUDE,
            tool="Write",
            toolCallId="toolu_1",
            turnId="ct1",
            label="notes.txt",
            meta={"agent": "claude-code"},
            files=[change("notes.txt", "added")],
        ),
        cp(
            "b1",
            11,
            "w1",
            CLAUDE,
            tool="Bash",
            toolCallId="toolu_2",
            turnId="ct2",
            label="rm old.txt",
            meta={"agent": "claude-code"},
            files=[change("old.txt", "deleted")],
        ),
        cp(
            "g1",
            21,
            "b1",
            GEMINI,
            tool="write_file",
            toolCallId="g-1",
            turnId="gt1",
            label="write_file: g.txt",
            meta={"agent": "gemini-cli"},
        ),
    ]
    facts = {
        START: facts_of(START, []),
        RETRACE: facts_of(
            RETRACE, [{"type": "turn", "turnId": "t1", "text": "own task", "createdAt": at(1).isoformat()}]
        ),
        CLAUDE: facts_of(
            CLAUDE,
            agent_events("claude-code", [("ct1", "write the notes", 5, None), ("ct2", "delete old", 10, 12)]),
        ),
        GEMINI: facts_of(GEMINI, agent_events("gemini-cli", [("gt1", "gemini task", 20, None)])),
    }
    return checkpoints, facts


def rows_of(story: SessionStory) -> list[StoryRow]:
    out: list[StoryRow] = []
    for item in story.items:
        out.extend(item.rows if isinstance(item, StoryTurn) else [item])
    return out


def by_id(stories: list[SessionStory]) -> dict[str, SessionStory]:
    return {s.session.id: s for s in stories}


def test_each_agent_session_is_its_own_labelled_story_in_time_order() -> None:
    checkpoints, facts = mixed()
    stories = build_stories(checkpoints, "g1", facts)
    assert [s.session.id for s in stories] == [START, RETRACE, CLAUDE, GEMINI]
    labels = [(s.session.agent, s.session.agent_title) for s in stories]
    assert labels == [
        (None, None),
        (None, None),
        ("claude-code", "Claude Code"),
        ("gemini-cli", "Gemini CLI"),
    ]
    claude = by_id(stories)[CLAUDE]
    turns = [i for i in claude.items if isinstance(i, StoryTurn)]
    assert [(t.prompt, [r.checkpoint.id for r in t.rows]) for t in turns] == [
        ("write the notes", ["x1", "w1"]),
        ("delete old", ["b1"]),
    ]
    assert claude.session.title == "write the notes"
    assert claude.session.last_activity_at == at(12)  # the turnEnd, later than its last checkpoint


def test_agent_rows_show_tool_and_input_summary_and_offer_no_conversation_restore() -> None:
    checkpoints, facts = mixed()
    stories = by_id(build_stories(checkpoints, "g1", facts))
    rows = {r.checkpoint.id: r for s in stories.values() for r in rows_of(s)}
    assert rows["w1"].title == "Write: notes.txt"
    assert rows["b1"].title == "Bash: rm old.txt"
    assert rows["g1"].title == "write_file: g.txt"  # a label already naming its tool is kept
    assert rows["w1"].summary == "notes.txt added (binary)" or "notes.txt" in rows["w1"].summary
    for cid, agent in (
        ("x1", "Claude Code"),
        ("w1", "Claude Code"),
        ("b1", "Claude Code"),
        ("g1", "Gemini CLI"),
    ):
        restore = rows[cid].conversation_restore
        assert restore is not None and not restore.available
        assert restore.reason == f"{agent} keeps its own conversation; Retrace restores only the code"
    for cid in ("base", "r1"):
        assert rows[cid].conversation_restore is None


def test_turn_states_as_built_then_stamped_by_the_clock() -> None:
    checkpoints, facts = mixed()
    _, items = zip(*story_items(checkpoints, "g1", facts), strict=True)
    built = [StoryPages(story, its) for story, its in story_items(checkpoints, "g1", facts)]
    assert len(built) == len(items)

    def states(now: datetime) -> tuple[dict[str, Any], dict[str, bool]]:
        stories = select(built, TimelineTreeParams(), now=now)
        turns = {i.turn_id: i.state for s in stories for i in s.items if isinstance(i, StoryTurn)}
        return turns, {s.session.id: s.session.running for s in stories}

    turns, running = states(at(25))
    assert turns == {"t1": None, "ct1": "interrupted", "ct2": "ended", "gt1": "running"}
    assert running == {START: False, RETRACE: False, CLAUDE: False, GEMINI: True}
    turns, running = states(at(21) + IDLE_LIMIT + timedelta(seconds=1))  # Gemini died mid-turn
    assert turns["gt1"] == "interrupted"
    assert running[GEMINI] is False


def test_an_agent_session_without_a_turn_is_still_its_own_story() -> None:
    checkpoints = [
        cp("base", 0, None, START, "baseline"),
        cp(
            "w1", 1, "base", CLAUDE, tool="Read", toolCallId="t", label="a.txt", meta={"agent": "claude-code"}
        ),
        cp("x1", 2, "w1", START, "external", files=[change("a.txt")]),
    ]
    facts = {
        START: facts_of(START, []),
        CLAUDE: facts_of(CLAUDE, agent_events("claude-code", [])),
    }
    stories = by_id(build_stories(checkpoints, "x1", facts))
    assert [r.checkpoint.id for r in rows_of(stories[CLAUDE])] == ["w1", "x1"]
    assert stories[CLAUDE].session.agent == "claude-code"


# --------------------------------------------------------------------------- over a real store


class Store:
    def __init__(self, root: Path) -> None:
        self.ws, self.store = root / "ws", root / "store"
        self.ws.mkdir()
        (self.ws / "a.txt").write_text("a\n")
        self.engine = Engine.open(self.ws, self.store, config=EngineConfig(watcher=False))

    def claude_turn(self, sid: str, turn_id: str, prompt: str, *, first: bool) -> None:
        if first:
            self.engine.append_event(
                AgentSessionEvent(agent="claude-code", external_session_id=sid, cwd=str(self.ws)),
                session_id=sid,
            )
        self.engine.append_event(TurnEvent(turn_id=turn_id, text=prompt), session_id=sid)

    def claude_write(self, sid: str, turn_id: str, name: str, text: str) -> Checkpoint:
        (self.ws / name).write_text(text)
        return self.engine.checkpoint(
            label=name,
            changed_paths=[name],
            kind="tool",
            tool="Write",
            tool_call_id=f"toolu_{name}",
            turn_id=turn_id,
            session_id=sid,
            meta={"agent": "claude-code"},
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path)
    yield s
    s.engine.close()


def dump(pages: dict[str, StoryPages]) -> list[str]:
    return [p.page(ALL_ROWS).model_dump_json() for p in pages.values()]


def test_a_new_agent_sessions_first_checkpoint_makes_a_new_story_live(store: Store) -> None:
    cache = TimelineCache()
    cache.stories(store.engine)
    assert cache.ready
    sid = "claude-code-s1"
    store.claude_turn(sid, "ct1", "write the notes", first=True)
    cp1 = store.claude_write(sid, "ct1", "notes.txt", "n\n")
    change = cache.change(store.engine, cp1, lambda _s, _c: None)
    assert change is not None
    assert change.story_id == sid  # a story the client does not know: it fetches the tree
    assert change.turn is not None and change.turn.prompt == "write the notes"
    assert change.row is not None and change.row.title == "Write: notes.txt"
    story = cache.stories(store.engine)[sid].story
    assert story.session.agent_title == "Claude Code"
    assert dump(cache.stories(store.engine)) == dump(TimelineCache().stories(store.engine))


def test_a_turns_end_and_a_new_prompt_are_seen_without_announcement(store: Store) -> None:
    sid = "claude-code-s2"
    store.claude_turn(sid, "ct1", "first", first=True)
    store.claude_write(sid, "ct1", "one.txt", "1\n")
    cache = TimelineCache()
    params = TimelineTreeParams()

    def turn_states() -> dict[str, Any]:
        stories = select(list(cache.stories(store.engine).values()), params)
        return {i.turn_id: i.state for s in stories for i in s.items if isinstance(i, StoryTurn)}

    assert turn_states() == {"ct1": "running"}
    builds = cache.builds

    def same_as_a_rebuild() -> None:
        assert dump(cache.stories(store.engine)) == dump(TimelineCache().stories(store.engine))
        assert cache.builds == builds, "placed in place: no rebuild"

    store.claude_write(sid, "ct1", "two.txt", "2\n")  # only a checkpoint: appended
    assert turn_states() == {"ct1": "running"}
    same_as_a_rebuild()
    store.engine.append_event(TurnEndEvent(turn_id="ct1"), session_id=sid)
    assert turn_states() == {"ct1": "ended"}
    same_as_a_rebuild()
    store.claude_turn(sid, "ct2", "second", first=False)
    cache.note_turn(sid, "ct2", "second", datetime.now(UTC))  # as the server does when told
    assert turn_states() == {"ct1": "ended", "ct2": "running"}
    same_as_a_rebuild()
    store.claude_write(sid, "ct2", "three.txt", "3\n")
    store.claude_turn(sid, "ct3", "third, the user interrupted the second", first=False)
    store.claude_turn(sid, "ct3", "a repeated prompt event is one turn", first=False)
    assert turn_states() == {"ct1": "ended", "ct2": "interrupted", "ct3": "running"}
    same_as_a_rebuild()
    store.engine.append_event(TurnEndEvent(turn_id="ct2"), session_id=sid)  # a late end
    store.engine.append_event(TurnEndEvent(turn_id="ct3"), session_id=sid)
    assert turn_states() == {"ct1": "ended", "ct2": "ended", "ct3": "ended"}
    same_as_a_rebuild()
    ct3 = cache.stories(store.engine)[sid].page(ALL_ROWS).items[-1]
    assert isinstance(ct3, StoryTurn) and (ct3.number, ct3.prompt) == (
        3,
        "third, the user interrupted the second",
    )


def test_anything_else_appended_to_an_agent_journal_rebuilds(store: Store) -> None:
    sid = "claude-code-s4"
    store.claude_turn(sid, "ct1", "first", first=True)
    store.claude_write(sid, "ct1", "one.txt", "1\n")
    cache = TimelineCache()
    cache.stories(store.engine)
    builds = cache.builds
    store.engine.append_event(TurnEvent(turn_id="ct2", text="second"), session_id=sid)
    store.engine.append_event(
        AgentSessionEvent(agent="gemini-cli", external_session_id="x"), session_id=sid
    )  # not a first line: no meaning, but not a turn either
    assert dump(cache.stories(store.engine)) == dump(TimelineCache().stories(store.engine))
    assert cache.builds == builds + 1


def test_running_turns_of_a_store(store: Store) -> None:
    assert running_turns(store.engine) == []
    store.claude_turn("claude-code-a", "a1", "still going\nmore", first=True)
    store.claude_turn("claude-code-b", "b1", "done", first=True)
    store.engine.append_event(TurnEndEvent(turn_id="b1"), session_id="claude-code-b")
    turns = running_turns(store.engine)
    assert [(t.session_id, t.turn_id, t.agent_title, t.prompt) for t in turns] == [
        ("claude-code-a", "a1", "Claude Code", "still going")
    ]
    later = datetime.now(UTC) + IDLE_LIMIT + timedelta(minutes=1)
    assert running_turns(store.engine, later) == []


def test_the_persisted_cache_keeps_agent_facts(store: Store) -> None:
    sid = "claude-code-s3"
    store.claude_turn(sid, "ct1", "first", first=True)
    store.claude_write(sid, "ct1", "one.txt", "1\n")
    store.engine.append_event(TurnEndEvent(turn_id="ct1"), session_id=sid)
    path = StoreLayout(store.store).cache / FILE_NAME
    cold = TimelineCache(path)
    fresh = dump(cold.stories(store.engine))
    job = cold.snapshot()
    assert job is not None and job()
    warm = TimelineCache(path)
    assert dump(warm.stories(store.engine)) == fresh
    assert warm.folds == 0
    assert warm.stories(store.engine)[sid].story.session.agent == "claude-code"
    store.claude_turn(sid, "ct2", "second", first=False)  # placed in place; the file folds on
    warm.stories(store.engine)
    job = warm.snapshot(now=float("inf"))
    assert job is None or job()
    again = TimelineCache(path)
    assert dump(again.stories(store.engine)) == dump(TimelineCache().stories(store.engine))
    assert again.folds == 0 and again.tail_folds == 1


def test_a_removed_agent_journal_costs_one_rebuild(store: Store) -> None:
    sid = "claude-code-s5"
    store.claude_turn(sid, "ct1", "first", first=True)
    cache = TimelineCache()
    assert sid in cache.stories(store.engine)
    builds = cache.builds
    journal = StoreLayout(store.store).journal(sid)
    journal.unlink()
    journal.parent.rmdir()
    assert sid not in cache.stories(store.engine)
    cache.stories(store.engine)
    assert cache.builds == builds + 1
