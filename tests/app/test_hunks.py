"""The pure hunk core (`retrace.app.hunks`): tables for the shapes people meet, properties for the
rest (exact round trips, CRLF, no final newline, a changed file is a conflict)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrace.app import hunks as hk

BASE = "a\nb\nc\nd\ne\nf\ng\n"
TWO_PLACES = "a\nB\nc\nd\ne\nF\nF2\ng\n"


@pytest.mark.parametrize(
    ("base", "current", "ids"),
    [
        (BASE, BASE, []),
        (BASE, TWO_PLACES, ["1,1,1,1", "5,1,5,2"]),
        ("", "x\n", ["0,0,0,1"]),
        ("x\n", "", ["0,1,0,0"]),
        ("a\nb", "a\nb\n", ["1,1,1,1"]),  # the final newline is a change of the last line
        ("a\r\nb\r\n", "a\r\nB\r\nb\r\n", ["1,0,1,1"]),
        ("a\r\nb\r\n", "a\nb\r\n", ["0,1,0,1"]),  # CRLF → LF is a change
    ],
)
def test_hunks_table(base: str, current: str, ids: list[str]) -> None:
    assert [h.id for h in hk.hunks(base, current)] == ids


def test_undo_one_of_two_hunks_keeps_the_other() -> None:
    first, second = hk.hunks(BASE, TWO_PLACES)
    assert hk.revert(TWO_PLACES, first) == "a\nb\nc\nd\ne\nF\nF2\ng\n"
    assert hk.revert(TWO_PLACES, second) == "a\nB\nc\nd\ne\nf\ng\n"


def test_no_final_newline_and_crlf_are_exact() -> None:
    base, current = "x\r\ny\r\nz", "x\r\nY\r\nz"
    (h,) = hk.hunks(base, current)
    assert hk.revert(current, h) == base
    assert hk.reapply(base, h) == current


def test_a_changed_file_is_a_conflict_never_an_overwrite() -> None:
    expected = hk.text_hash(TWO_PLACES)
    hk.check_current(TWO_PLACES, expected, "f.txt")
    with pytest.raises(hk.HunkConflict) as err:
        hk.check_current(TWO_PLACES + "user typed\n", expected, "f.txt")
    assert err.value.code == "hunkConflict"
    (first, _) = hk.hunks(BASE, TWO_PLACES)
    with pytest.raises(hk.HunkConflict):
        hk.revert("totally\ndifferent\n", first)


def test_unknown_hunk() -> None:
    with pytest.raises(hk.UnknownHunk):
        hk.find(BASE, TWO_PLACES, "9,9,9,9")
    with pytest.raises(hk.UnknownHunk):
        hk.find(BASE, TWO_PLACES, "")


_line = st.sampled_from(["a", "b", "c", "", "é", "x y"]).flatmap(
    lambda body: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda end: body + end)
)
_text = st.tuples(st.lists(_line, max_size=12), st.sampled_from(["", "tail", "\r"])).map(
    lambda parts: "".join(parts[0]) + parts[1]
)


@settings(max_examples=300, deadline=None)
@given(_text)
def test_split_lines_is_lossless(text: str) -> None:
    assert "".join(hk.split_lines(text)) == text
    assert all(line.endswith("\n") for line in hk.split_lines(text)[:-1])


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_revert_and_reapply_round_trip(base: str, current: str) -> None:
    found = hk.hunks(base, current)
    for h in found:
        reverted = hk.revert(current, h)
        assert hk.reapply(reverted, h) == current
        assert hk.find(base, current, h.id) == h
        # Only this hunk's lines changed: everything before and after it is as it was.
        lines, out = hk.split_lines(current), hk.split_lines(reverted)
        assert out[: h.current_start] == lines[: h.current_start]
        assert out[h.current_start + h.base_count :] == lines[h.current_start + h.current_count :]
    assert hk.revert_all(base, current) == base
    assert (found == []) == (base == current)


@settings(max_examples=200, deadline=None)
@given(_text, _text, _text)
def test_stale_hash_is_always_refused(base: str, current: str, other: str) -> None:
    if other == current:
        return
    with pytest.raises(hk.HunkConflict):
        hk.check_current(other, hk.text_hash(current), "p")
    del base
