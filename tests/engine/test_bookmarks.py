"""Bookmarks (``engine/bookmarks.py``, the name rule ``engine/bookmark_name.py``): table tests of
the name rule, of which checkpoint is a bookmark and of the order a restore pick offers them; over
a real store, that a name survives a reopen (replayed from its journal event, through the history
index too), the last name wins, an empty one removes it, and a forged or damaged name line is
skipped with a warning, never trusted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrace.engine import Engine
from retrace.engine.bookmark_name import (
    MAX_NAME_CHARS,
    BookmarkNameError,
    bookmarks,
    clean_name,
    label_name,
    required_name,
)
from retrace.engine.bookmarks import (
    bookmark_now,
    bookmarks_first,
    engine_bookmarks,
    mark,
    name_checkpoint,
)
from retrace.engine.config import EngineConfig
from retrace.engine.errors import RetraceError, UnknownCheckpoint
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import CheckpointNameEvent, EventSchemaError, parse_event
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.seal import seal_line


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("before the refactor", "before the refactor"),
        ("  padded\t", "padded"),
        ("", ""),
        ("   ", ""),
        ("ünïcødé ✓ 名前", "ünïcødé ✓ 名前"),
        ("x" * MAX_NAME_CHARS, "x" * MAX_NAME_CHARS),
    ],
)
def test_clean_name_accepts(raw: str, stored: str) -> None:
    assert clean_name(raw) == stored


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("x" * (MAX_NAME_CHARS + 1), "at most"),
        ("two\nlines", "U+000A"),
        ("bell\x07", "U+0007"),
        ("nul\x00", "U+0000"),
        ("esc\x1b[31m", "U+001B"),
        ("del\x7f", "U+007F"),
        ("rtl\u202eevil", "U+202E"),
        ("zero\u200bwidth", "U+200B"),
        ("line\u2028sep", "U+2028"),
        ("c1\x85one", "U+0085"),
    ],
)
def test_clean_name_refuses_with_the_reason(raw: str, why: str) -> None:
    with pytest.raises(BookmarkNameError, match=why.replace("+", r"\+")):
        clean_name(raw)


@pytest.mark.parametrize("raw", ["", "  ", "\t"])
def test_a_new_bookmark_needs_a_name(raw: str) -> None:
    with pytest.raises(BookmarkNameError, match="needs a name"):
        required_name(raw)


def _cp(cid: str, kind: str = "tool", label: str = "", meta: dict[str, object] | None = None) -> Checkpoint:
    return Checkpoint(
        id=cid,
        parent=None,
        session_id="s",
        kind=kind,  # type: ignore[arg-type]
        label=label,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        meta=meta or {},
    )


@pytest.mark.parametrize(
    ("cp", "names", "expected"),
    [
        (_cp("a"), {}, None),  # a tool row, never named
        (_cp("a"), {"a": "good state"}, "good state"),
        (_cp("a", "manual", "release 1"), {}, "release 1"),  # a mark's label
        (_cp("a", "manual", "release 1"), {"a": "renamed"}, "renamed"),  # the given name wins
        (_cp("a", "manual", "release 1"), {"a": ""}, None),  # removed: not a bookmark any more
        (_cp("a", "manual", ""), {}, None),  # a mark without a label
        (_cp("a", "manual", "\n  first line\nsecond"), {}, "first line"),
        (_cp("a", "manual", "apply subagent result: x", {"task": {"id": "t"}}), {}, None),
        (_cp("a", "restore"), {"b": "other"}, None),
    ],
)
def test_which_checkpoint_is_a_bookmark(cp: Checkpoint, names: dict[str, str], expected: str | None) -> None:
    assert bookmarks([cp], names).get(cp.id) == expected


def test_a_long_label_is_cut_to_a_name() -> None:
    name = label_name(_cp("a", "manual", "y" * 500))
    assert len(name) == MAX_NAME_CHARS and name.endswith("…")


@pytest.mark.parametrize(
    ("newest_first", "named", "expected"),
    [
        ([], {}, []),
        (["c", "b", "a"], {}, ["c", "b", "a"]),
        (["c", "b", "a"], {"a": "x"}, ["a", "c", "b"]),
        (["d", "c", "b", "a"], {"a": "x", "c": "y"}, ["c", "a", "d", "b"]),
        (["c", "b", "a"], {"a": "x", "b": "y", "c": "z"}, ["c", "b", "a"]),
        (["b", "a"], {"gone": "x"}, ["b", "a"]),
    ],
)
def test_bookmarks_first_keeps_each_group_newest_first(
    newest_first: list[str], named: dict[str, str], expected: list[str]
) -> None:
    assert bookmarks_first(newest_first, named) == expected


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "checkpointName", "checkpointId": "abc", "name": "bad\x1bname"},
        {"type": "checkpointName", "checkpointId": "abc", "name": "x" * 101},
        {"type": "checkpointName", "checkpointId": "abc", "name": " padded "},
        {"type": "checkpointName", "checkpointId": "", "name": "ok"},
        {"type": "checkpointName", "checkpointId": "abc"},
        {"type": "checkpointName", "checkpointId": 7, "name": "ok"},
    ],
)
def test_a_malformed_name_event_is_damage(raw: dict[str, object]) -> None:
    with pytest.raises(EventSchemaError):
        parse_event(raw)


# ---------------------------------------------------------------------- over a real store


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    (d / "a.txt").write_text("one\n")
    return d


@pytest.fixture
def engine(ws: Path, store: Path) -> Iterator[Engine]:
    eng = Engine.open(ws, store, config=EngineConfig(watcher=False))
    yield eng
    eng.close()


def _reopen(ws: Path, store: Path) -> Engine:
    return Engine.open(ws, store, config=EngineConfig(watcher=False), create=False)


def test_a_name_survives_a_reopen_and_the_last_one_wins(engine: Engine, ws: Path, store: Path) -> None:
    (ws / "a.txt").write_text("two\n")
    cp = engine.checkpoint(label="edit", kind="tool", tool="edit_file")
    assert name_checkpoint(engine, cp.id, "first try").name == "first try"
    assert name_checkpoint(engine, cp.id[:8], "  works  ").name == "works"  # a prefix, stripped
    assert engine_bookmarks(engine) == {cp.id: "works"}
    engine.close()
    for _ in range(2):  # the second open reads through the history index
        with _reopen(ws, store) as again:
            assert engine_bookmarks(again) == {cp.id: "works"}


def test_an_empty_name_removes_it_even_a_marks_label(engine: Engine, ws: Path, store: Path) -> None:
    marked = mark(engine, "release 1", session_id="cli")
    assert engine_bookmarks(engine) == {marked.id: "release 1"}
    assert name_checkpoint(engine, marked.id, "").name is None
    assert engine_bookmarks(engine) == {}
    engine.close()
    with _reopen(ws, store) as again:
        assert engine_bookmarks(again) == {}


@pytest.mark.parametrize(
    ("target", "name", "error"),
    [
        ("nope-no-such", "ok", UnknownCheckpoint),
        (None, "bad\nname", BookmarkNameError),
        (None, "z" * 101, BookmarkNameError),
    ],
)
def test_a_bad_request_names_nothing(
    engine: Engine, store: Path, target: str | None, name: str, error: type[Exception]
) -> None:
    journal = StoreLayout(store).journal(engine.head.session_id)
    before = journal.read_bytes()
    with pytest.raises(error):
        name_checkpoint(engine, target or engine.head.id, name)
    assert journal.read_bytes() == before
    assert engine_bookmarks(engine) == {}


def test_a_read_only_engine_refuses_to_name(engine: Engine, ws: Path, store: Path) -> None:
    head = engine.head.id
    with Engine.open(ws, store, readonly=True, create=False) as reader, pytest.raises(RetraceError):
        name_checkpoint(reader, head, "x")


def test_bookmark_now_records_every_change_or_none_during_a_turn(engine: Engine, ws: Path) -> None:
    with pytest.raises(BookmarkNameError):
        bookmark_now(engine, "  ", session_id="editor", between_tools=False)
    (ws / "a.txt").write_text("changed\n")
    now = bookmark_now(engine, "my state", session_id="editor", between_tools=False)
    assert [f.path for f in now.files] == ["a.txt"] and now.kind == "manual"
    (ws / "a.txt").write_text("a tool is writing this\n")
    during = bookmark_now(engine, "mid turn", session_id="editor", between_tools=True)
    assert during.files == [] and during.meta.get("duringTurn") is True
    assert engine.file_content(during.id, "a.txt") == b"changed\n"  # the half-written file is not in it
    assert engine_bookmarks(engine) == {now.id: "my state", during.id: "mid turn"}


def _append_raw(journal: Path, event: dict[str, object], *, sealed: bool = True) -> None:
    line = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    with journal.open("ab") as f:
        f.write((seal_line(line) if sealed else line) + b"\n")


def test_a_forged_or_damaged_name_line_is_skipped_with_a_warning(
    engine: Engine, ws: Path, store: Path
) -> None:
    cp = engine.head
    name_checkpoint(engine, cp.id, "kept")
    engine.close()
    journal = StoreLayout(store).journal(cp.session_id)
    base = {"type": "checkpointName", "v": 2, "ts": 9e9, "checkpointId": cp.id}
    _append_raw(journal, {**base, "name": "evil\u202ename"})  # sealed, but breaks the rule
    good = json.dumps({**base, "name": "tampered"}, separators=(",", ":")).encode()
    with journal.open("ab") as f:  # a valid line whose content changed after sealing
        f.write(seal_line(good).replace(b"tampered", b"tamperex") + b"\n")
    _append_raw(journal, {"type": "checkpoint", "v": 2})  # padding so no line is a torn tail
    with _reopen(ws, store) as again:
        assert engine_bookmarks(again) == {cp.id: "kept"}
        problems = "\n".join(again.problems)
        assert "bookmark name skipped" in problems and "U+202E" in problems


def test_the_event_round_trips() -> None:
    event = CheckpointNameEvent(checkpoint_id="abc", name="good")
    assert parse_event(json.loads(event.model_dump_json(by_alias=True))) == event


@pytest.mark.parametrize("how", ["named row", "mark", "renamed mark", "unnamed"])
def test_retention_keeps_bookmarks_whatever_their_age_or_count(ws: Path, store: Path, how: str) -> None:
    """A bookmark is a person's "come back here": retention (count and age quotas, the automatic
    cleanup included) never drops one; a removed name makes it an ordinary checkpoint again."""
    from retrace.engine.config import RetentionPolicy

    eng = Engine.open(
        ws, store, config=EngineConfig(watcher=False, retention=RetentionPolicy(max_checkpoints=3))
    )
    try:
        (ws / "a.txt").write_text("old\n")
        if how == "named row":
            old = eng.checkpoint(label="edit", kind="tool", tool="edit_file")
            name_checkpoint(eng, old.id, "tests pass")
        else:
            old = mark(eng, "before the refactor")
            if how == "renamed mark":
                name_checkpoint(eng, old.id, "still wanted")
            if how == "unnamed":
                name_checkpoint(eng, old.id, "")
        for i in range(8):
            (ws / "a.txt").write_text(f"v{i}\n")
            eng.checkpoint(label=f"v{i}", kind="tool", tool="edit_file")
        eng.gc()
        kept = {c.id for c in eng.timeline()}
        assert (old.id in kept) is (how != "unnamed")
        if how != "unnamed":
            assert eng.file_content(old.id, "a.txt") == b"old\n"
    finally:
        eng.close()
