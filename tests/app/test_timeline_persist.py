"""The persisted timeline cache over a real store: a timeline answered from it equals a fresh
build from the journals, whatever happened to the journals or to the cache file in between
(appends, a conversation restore, retention, a journal replaced or cut behind its back, a
damaged, partial or foreign cache file); an unchanged store is answered without folding any
journal."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.e2e.seed_long import start

from retrace.app.timeline import StoryPages, TimelineCache
from retrace.app.timeline.cache import ALL_ROWS
from retrace.app.timeline.persist import FILE_NAME, load_records
from retrace.engine import Engine
from retrace.engine.config import EngineConfig, RetentionPolicy
from retrace.engine.store.layout import StoreLayout

STEPS = 4


def dump(pages: dict[str, StoryPages]) -> list[str]:
    return [p.page(ALL_ROWS).model_dump_json() for p in pages.values()]


class Store:
    """A workspace and store with two agent sessions (and the baseline's engine session)."""

    def __init__(self, root: Path) -> None:
        self.ws, self.store = root / "ws", root / "store"
        self.ws.mkdir()
        self.path = StoreLayout(self.store).cache / FILE_NAME
        self.engine = Engine.open(self.ws, self.store, config=EngineConfig(watcher=False))
        self.first = start(self.engine, self.ws)
        for turn in range(1, 4):
            self.first.turn(turn, STEPS, (turn - 1) * STEPS)
        self.second = start(self.engine, self.ws)
        self.second.turn(1, STEPS, 0)

    def journal(self, sid: str) -> Path:
        return StoreLayout(self.store).journal(sid)

    def save(self) -> TimelineCache:
        cache = TimelineCache(self.path)
        cache.stories(self.engine)
        job = cache.snapshot()
        assert job is not None and job()
        return cache

    def reopen(self, config: EngineConfig | None = None) -> None:
        self.engine.close()
        self.engine = Engine.open(self.ws, self.store, config=config or EngineConfig(watcher=False))
        self.first.engine = self.second.engine = self.engine

    def warm_equals_fresh(self) -> TimelineCache:
        warm = TimelineCache(self.path)
        answered = dump(warm.stories(self.engine))
        assert answered == dump(TimelineCache().stories(self.engine))
        return warm


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path)
    yield store
    store.engine.close()


def test_an_unchanged_store_is_answered_without_folding_a_journal(seeded: Store) -> None:
    cold = seeded.save()
    assert cold.folds == len(seeded.engine.sessions())
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert warm.folds == 0
    assert warm.snapshot() is None, "nothing new to write"


def _appended(s: Store) -> None:
    s.first.turn(4, STEPS, 3 * STEPS)


def _restored(s: Store) -> None:  # the conversation goes back to an earlier checkpoint, then on
    target = s.engine.timeline(s.first.sid)[2]
    s.first.event({"type": "conversationHead", "head": None, "reason": "restore", "checkpointId": target.id})
    s.first.head = None
    s.first.turn(5, STEPS, 4 * STEPS)


def _code_restored(s: Store) -> None:  # a restore row names its target's words
    s.engine.restore(s.engine.timeline(s.second.sid)[1].id)


def _retention(s: Store) -> None:
    s.reopen(EngineConfig(watcher=False, retention=RetentionPolicy(max_checkpoints=6)))
    s.engine.gc()


def _replaced(s: Store) -> None:  # same bytes but one prompt, through a new file (a new inode)
    path = s.journal(s.first.sid)
    data = path.read_bytes().replace(b"Turn 2: refactor", b"Turn 2: rewrote!", 1)
    tmp = path.with_name("new")
    tmp.write_bytes(data)
    tmp.replace(path)


def _rewritten_in_place(s: Store) -> None:  # same inode, same size, other bytes
    path = s.journal(s.first.sid)
    data = path.read_bytes().replace(b"Turn 1: refactor", b"Turn 1: REFACTOR", 1)
    with path.open("r+b") as f:
        f.write(data)


def _truncated(s: Store) -> None:  # cut after its second turn's events: rows lose their words
    path = s.journal(s.first.sid)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"type":"turn"' in line and b"Turn 3" in line)
    path.write_bytes(b"".join(lines[:cut]))


def _journal_removed(s: Store) -> None:
    os.remove(s.journal(s.second.sid))


Mutation = Callable[[Store], None]
CHANGES: dict[str, tuple[Mutation, int, int]] = {
    # name: (what happens after the cache was written, how many journals a warm start folds
    # whole, how many it folds on from the file with the lines appended since; -1: not checked,
    # the engine's reopen writes records of its own)
    "appended": (_appended, 0, 1),
    "conversation restored": (_restored, 0, 1),
    "code restored": (_code_restored, 0, 2),  # the safety and restore rows are the engine session's
    "retention dropped checkpoints": (_retention, -1, 0),
    "journal replaced": (_replaced, 1, 0),
    "journal rewritten in place": (_rewritten_in_place, 1, 0),
    "journal truncated": (_truncated, -1, 0),
    "journal removed": (_journal_removed, -1, 0),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_warm_answer_equals_a_fresh_build_after(seeded: Store, name: str) -> None:
    change, folds, tail_folds = CHANGES[name]
    seeded.save()
    change(seeded)
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert warm.tail_folds == tail_folds
    if folds >= 0:
        assert warm.folds == folds
    rewritten = warm.snapshot()
    assert (rewritten is None) == (warm.folds + warm.tail_folds == 0)
    if rewritten is not None:
        rewritten()
        again = seeded.warm_equals_fresh()
        assert again.folds == again.tail_folds == 0, "the rewritten file covers the journals as they are"


def _call_started(s: Store) -> None:  # the cache is written while a tool call runs
    s.first.event({"type": "turn", "turnId": "turn_mid", "text": "Turn M: mid-call", "createdAt": None})
    s.first.event(
        {"type": "toolCallIntent", "id": "toolu_mid", "tool": "edit_file", "turnId": "turn_mid",
         "input": {"path": "src/mod_00.py", "old_string": "value_0 = 0", "new_string": "value_0 = 9"}}
    )  # fmt: skip


def _call_ended(s: Store) -> None:  # its result and checkpoint come after: its input is not in the file
    (s.ws / "src/mod_00.py").write_text("value_0 = 9\n", "utf-8")
    s.first.event({"type": "toolCallResult", "id": "toolu_mid", "tool": "edit_file", "status": "ok"})
    s.engine.checkpoint("edit_file: src/mod_00.py", ["src/mod_00.py"], kind="tool", session_id=s.first.sid,
                        turn_id="turn_mid", tool="edit_file", tool_call_id="toolu_mid")  # fmt: skip


def _conversation_moved(s: Store) -> None:  # the cache is written between a restore and the next turn
    target = s.engine.timeline(s.first.sid)[5]
    s.first.event({"type": "conversationHead", "head": None, "reason": "restore", "checkpointId": target.id})
    s.first.head = None


SPLIT: dict[str, tuple[Mutation, Mutation, int, int]] = {
    # name: (before the cache is written, after it, whole folds, folds on)
    "a tool call running when written": (_call_started, _call_ended, 1, 0),
    "a restore with no turn yet when written": (_conversation_moved, _appended, 0, 1),
}


@pytest.mark.parametrize("name", list(SPLIT))
def test_a_fold_goes_on_from_where_the_file_stopped(seeded: Store, name: str) -> None:
    before, after, folds, tail_folds = SPLIT[name]
    before(seeded)
    seeded.save()
    after(seeded)
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert (warm.folds, warm.tail_folds) == (folds, tail_folds)


def _torn(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _json_edit(edit: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        body = json.loads(path.read_text())
        edit(body)
        path.write_text(json.dumps(body))

    return apply


def _columns_skewed(body: dict[str, object]) -> None:
    sessions = body["sessions"]
    assert isinstance(sessions, dict)
    record = next(r for r in sessions.values() if r["rows"][0])
    record["rows"][1].pop()


def _rows_dropped(body: dict[str, object]) -> None:  # valid shape, but a tool row has no words
    sessions = body["sessions"]
    assert isinstance(sessions, dict)
    for record in sessions.values():
        record["rows"] = [[], [], []]


def _message_unhashable(body: dict[str, object]) -> None:  # a column value no string could be
    sessions = body["sessions"]
    assert isinstance(sessions, dict)
    next(r for r in sessions.values() if r["messages"][2])["messages"][2][0] = {"role": "user"}


DAMAGE: dict[str, Callable[[Path], None]] = {
    "torn": _torn,
    "not json": lambda p: p.write_bytes(b"\x00garbage"),
    "other version": _json_edit(lambda b: b.update(version=999)),
    "columns of different lengths": _json_edit(_columns_skewed),
    "a turn of the wrong shape": _json_edit(lambda b: next(iter(b["sessions"].values())).update(turns=[[1]])),  # type: ignore[attr-defined]
    "rows without words": _json_edit(_rows_dropped),
    "a message field that is an object": _json_edit(_message_unhashable),
    "empty": lambda p: p.write_bytes(b""),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_cache_file_is_rebuilt_from_the_journals(seeded: Store, name: str) -> None:
    seeded.save()
    DAMAGE[name](seeded.path)
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert warm.folds > 0


def test_rows_appended_to_a_warm_cache_equal_a_fresh_build(seeded: Store) -> None:
    """Facts from the file carry no tool inputs: a tool row appended without the agent knowing
    its call is described after folding its journal again, never from an empty input."""
    seeded.save()
    seeded.reopen()
    warm = TimelineCache(seeded.path)
    warm.stories(seeded.engine)
    assert warm.folds == 0
    seeded.first.turn(4, STEPS, 3 * STEPS)
    appended = dump(warm.stories(seeded.engine))  # no tool lookup: the agent does not know them
    assert appended == dump(TimelineCache().stories(seeded.engine))
    assert any("value_" in line for line in appended), "the new edits are described from their inputs"


def test_a_readonly_or_unpersisted_cache_writes_nothing(seeded: Store) -> None:
    cache = TimelineCache()
    cache.stories(seeded.engine)
    assert cache.snapshot() is None
    assert not seeded.path.exists()


def test_snapshots_are_spaced_by_save_every(seeded: Store) -> None:
    cache = TimelineCache(seeded.path, save_every=30.0)
    cache.stories(seeded.engine)
    job = cache.snapshot(now=100.0)
    assert job is not None and job()
    cache.invalidate(seeded.first.sid)
    cache.stories(seeded.engine)
    assert cache.snapshot(now=110.0) is None, "too soon"
    later = cache.snapshot(now=131.0)
    assert later is not None and later()


def test_a_malformed_fold_state_folds_the_whole_journal(seeded: Store) -> None:
    seeded.save()

    def bad_role(body: dict[str, object]) -> None:
        sessions = body["sessions"]
        assert isinstance(sessions, dict)
        sessions[seeded.first.sid]["messages"][2][0] = 42

    _json_edit(bad_role)(seeded.path)
    _appended(seeded)
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert (warm.folds, warm.tail_folds) == (1, 0)


def test_a_session_appended_to_after_the_build_is_written_as_folded(seeded: Store) -> None:
    """A snapshot taken after rows were appended in place keeps the session's record as it was
    folded: the next start folds on from there, and answers as a fresh build does."""
    cache = TimelineCache(seeded.path)
    cache.stories(seeded.engine)
    _appended(seeded)
    cache.stories(seeded.engine)  # appended in place (no tool lookup: folded again if need be)
    cache.invalidate(seeded.second.sid)
    seeded.second.turn(2, STEPS, STEPS)
    cache.stories(seeded.engine)
    job = cache.snapshot()
    assert job is not None and job()
    _appended(seeded)
    seeded.reopen()
    warm = seeded.warm_equals_fresh()
    assert warm.folds == 0


def test_a_loaded_cache_holds_each_repeated_string_once(seeded: Store) -> None:
    """Roles, kinds, turn ids, parents, tool names and statuses repeat thousands of times in a
    long store's file: loaded, each distinct value is one object (the parents are the ids)."""
    seeded.save()
    records = load_records(seeded.path)
    assert len(records) >= 2
    ids, parents, roles, turn_ids, kinds = (
        [v for r in records.values() for v in r.state.messages[i]] for i in range(5)
    )
    for column in (roles, turn_ids, kinds, parents):
        assert len({id(v) for v in column}) == len(set(column))
    known = {id(v) for v in ids}
    assert all(id(p) in known for p in parents if p is not None and p in set(ids))
    tools = [t for r in records.values() for t in r.facts.tools.values()]
    assert tools and len({id(t.tool) for t in tools}) == len({t.tool for t in tools})
    assert len({id(t.input) for t in tools}) == 1 and not tools[0].input
