"""The journal cursor (:mod:`retrace.engine.store.cursor`): each read returns exactly the typed
events appended since the previous one; anything it cannot vouch for (another file, a shorter
one, a rewrite) makes it start again from byte 0 and say so; a torn last line waits; damage is
reported, never raised, never typed wrong."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from retrace.engine.store.cursor import RACY_NS, TAIL_BYTES, JournalCursor, JournalMark, read_increment
from retrace.engine.store.events import MessageEvent, TurnEndEvent, TurnEvent, UsageEvent
from retrace.engine.store.journal import JournalWriter


def _append(path: Path, *events: object) -> None:
    w = JournalWriter(path)
    try:
        for e in events:
            w.append(e, sync=False)  # type: ignore[arg-type]
    finally:
        w.close()


def _turn(i: int) -> TurnEvent:
    return TurnEvent(turn_id=f"t{i}", text=f"prompt {i}")


def _ids(events: list[object]) -> list[str]:
    return [getattr(e, "turn_id", type(e).__name__) for e in events]


def _replace_file(path: Path) -> None:
    """Another file under the same name (what gc and repair do), with the same first lines."""
    data = path.read_bytes()
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    first = data.index(b"\n") + 1
    with path.open("rb+") as f:  # the same file, shorter
        f.truncate(first)


def _garble_middle(path: Path) -> None:
    """One byte of the FIRST line changed in place (the same file, same length)."""
    with path.open("rb+") as f:
        f.seek(5)
        b = f.read(1)
        f.seek(5)
        f.write(b"X" if b != b"X" else b"Y")


# (name, what happens between the first read (t0, t1 in the journal) and the second,
#  the turn ids the second read returns, whether it restarted)
CASES: list[tuple[str, Callable[[Path], None], list[str], bool]] = [
    ("nothing", lambda p: None, [], False),
    ("append", lambda p: _append(p, _turn(2), _turn(3)), ["t2", "t3"], False),
    ("partial last line", lambda p: p.open("ab").write(b'{"type":"turn","turnId":"t9"'), [], False),
    ("append after a partial line", lambda p: _append(p, _turn(2)), ["t2"], False),
    ("truncation", _truncate, ["t0"], True),
    (
        "replacement by another file",
        lambda p: (_replace_file(p), _append(p, _turn(2))),
        ["t0", "t1", "t2"],
        True,
    ),
    (
        "rewrite in place, then append",
        lambda p: (_garble_middle(p), _append(p, _turn(2))),
        ["t1", "t2"],
        True,
    ),
    ("deleted", lambda p: p.unlink(), [], True),
]


@pytest.mark.parametrize(("name", "change", "expected", "restarted"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("check", ["tail", "prefix"])
def test_the_second_read_returns_what_the_change_made_new(
    tmp_path: Path,
    name: str,
    change: Callable[[Path], None],
    expected: list[str],
    restarted: bool,
    check: str,
) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0), _turn(1))
    cursor = JournalCursor(journal, check=check)  # type: ignore[arg-type]
    first = cursor.read()
    assert _ids(first.events) == ["t0", "t1"] and not first.restarted and not first.damaged
    change(journal)
    second = cursor.read()
    assert _ids(second.events) == expected, name
    assert second.restarted is restarted, name
    assert second.grew is (bool(expected) and not restarted), name
    if name == "rewrite in place, then append":
        assert len(second.damaged) == 1 and ":1:" in second.damaged[0], "the changed line is reported"
    else:
        assert not second.damaged, name


def test_a_torn_line_completed_later_is_read_once(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0))
    cursor = JournalCursor(journal)
    cursor.read()
    other = tmp_path / "other.jsonl"
    _append(other, _turn(1))
    line = other.read_bytes()
    with journal.open("ab") as f:
        f.write(line[:20])
    assert cursor.read().events == []
    with journal.open("ab") as f:
        f.write(line[20:])
    assert _ids(cursor.read().events) == ["t1"]
    assert cursor.read().events == []


def test_a_damaged_line_in_the_middle_is_reported_and_the_rest_still_reads(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0))
    cursor = JournalCursor(journal)
    cursor.read()
    with journal.open("ab") as f:
        f.write(b"this is not json\n")
    _append(journal, _turn(1))
    read = cursor.read()
    assert _ids(read.events) == ["t1"]
    assert len(read.damaged) == 1 and read.damaged[0].startswith(f"{journal}:2:")


def test_a_line_without_checksum_after_checksummed_ones_is_damage_even_in_a_later_read(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0))
    cursor = JournalCursor(journal)
    cursor.read()
    with journal.open("ab") as f:  # a legacy-looking line: acceptable only before any sealed one
        f.write(b'{"type":"turn","turnId":"forged","text":"x"}\n')
    read = cursor.read()
    assert read.events == [] and len(read.damaged) == 1 and "checksum is missing" in read.damaged[0]


def test_a_legacy_journal_reads_as_before(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b'{"type":"turn","turnId":"old","text":"x","ts":1}\n')
    cursor = JournalCursor(journal)
    assert _ids(cursor.read().events) == ["old"]
    _append(journal, _turn(1))  # this version appends sealed lines to it
    assert _ids(cursor.read().events) == ["t1"]


def test_unknown_types_are_counted_and_known_types_that_do_not_validate_are_damage(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(
        b'{"type":"fromTheFuture","x":1}\n{"type":"turn","turnId":7}\n{"type":"turn","turnId":"ok","text":""}\n'
    )
    read = JournalCursor(journal).read()
    assert _ids(read.events) == ["ok"]
    assert read.unknown == {"fromTheFuture": 1}
    assert len(read.damaged) == 1 and ":2:" in read.damaged[0]


def test_only_and_skip_filter_by_type(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0), UsageEvent(input_tokens=3), TurnEndEvent(turn_id="t0"))
    only = JournalCursor(journal, only={UsageEvent}).read().events
    assert [type(e) for e in only] == [UsageEvent]
    skipped = JournalCursor(journal, skip={UsageEvent}).read().events
    assert [type(e) for e in skipped] == [TurnEvent, TurnEndEvent]


def test_an_untouched_journal_is_not_read_and_a_racy_one_is_checked(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0))
    inc = read_increment(journal, None)
    assert inc is not None
    old = replace(inc.mark, checked_ns=inc.mark.mtime_ns + RACY_NS + 1)
    again = read_increment(journal, old)
    assert again is not None and again.new == b"" and not again.restarted
    # Racy (the mark was taken in the same tick as the write): the digest decides.
    racy = replace(inc.mark, checked_ns=inc.mark.mtime_ns)
    same = read_increment(journal, racy)
    assert same is not None and same.new == b"" and not same.restarted
    forged = replace(racy, tail="0" * 64)
    assert (r := read_increment(journal, forged)) is not None and r.restarted


def test_a_long_journal_checks_only_its_tail_and_pushes_the_right_before_bytes(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(
        journal,
        *(
            MessageEvent(id=f"m{i}", parent=None, role="user", content=[{"type": "text", "text": "x" * 500}])
            for i in range(300)
        ),
    )
    first = read_increment(journal, None)
    assert first is not None and first.start == 0 and first.before == b""
    _append(journal, _turn(1))
    second = read_increment(journal, first.mark)
    assert second is not None and not second.restarted and second.start == first.mark.offset
    assert second.before == journal.read_bytes()[second.start - TAIL_BYTES : second.start]
    assert second.new.count(b"\n") == 1 and second.first_line == 301


@pytest.mark.parametrize(
    "raw",
    [[], [1] * 9, [1, 2, 3, 4, 5, "d", 7, 0, False], [1, 2, -3, 4, 5, "d", None, 0, False], "x"],
)
def test_a_malformed_mark_is_refused(raw: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        JournalMark.from_json(raw)


def test_a_mark_round_trips(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    _append(journal, _turn(0))
    inc = read_increment(journal, None, check="prefix")
    assert inc is not None
    assert JournalMark.from_json(inc.mark.to_json()) == inc.mark
