"""text_edits: minimal LSP edits that reproduce the new text exactly, in UTF-16 positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from tests.lsp.lsp_support import apply_utf16_edits

from retrace.lsp.text_edits import apply_text_edits, text_edits, whole_document_edit

CASES = [
    pytest.param("hello\nworld\n", "hello\nWorld\n", id="ascii"),
    pytest.param("café\nnaïve\n", "café\nnaïveté\n", id="non-ascii"),
    pytest.param("a😀b\n", "a😀😀b\n", id="astral-emoji"),
    pytest.param("x = '😋'\ny = 1\n", "x = '😋'\ny = 2\n", id="astral-before-edit"),
    pytest.param("one\r\ntwo\r\nthree\r\n", "one\r\n2\r\nthree\r\n", id="crlf"),
    pytest.param("one\r\ntwo\r\n", "one\r\ntwo\r\nthree\r\n", id="crlf-append-line"),
    pytest.param("no final newline", "no final newline!", id="no-final-newline"),
    pytest.param("end\n", "end", id="drop-final-newline"),
    pytest.param("end", "end\n", id="add-final-newline"),
    pytest.param("", "fresh\n", id="from-empty"),
    pytest.param("gone\n", "", id="to-empty"),
    pytest.param("mac\rline\r", "mac\rLINE\r", id="lone-cr"),
    pytest.param("a\nb\n", "a\r\nb\r\n", id="lf-to-crlf"),
]


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize(("old", "new"), CASES)
def test_edits_reproduce_new_text(old: str, new: str) -> None:
    edits = text_edits(old, new)
    assert edits is not None
    assert apply_utf16_edits(old, edits) == new  # an independent, editor-like applier
    assert apply_text_edits(old, edits) == new


def test_equal_texts_mean_no_change_not_empty_edit_list() -> None:
    assert text_edits("same\n", "same\n") is None


def test_positions_count_utf16_code_units() -> None:
    # The insertion point sits after "a😀": 1 + 2 UTF-16 units, not 2 code points.
    [edit] = text_edits("a😀b", "a😀Xb") or []
    assert edit.range.start == lsp.Position(line=0, character=3)
    assert edit.new_text == "X"


def test_edits_are_minimal_for_a_one_word_change() -> None:
    old = "".join(f"line {i}\n" for i in range(200))
    new = old.replace("line 150\n", "line one-fifty\n")
    edits = text_edits(old, new) or []
    assert len(edits) == 1
    assert edits[0].range.start.line == 150
    assert len(edits[0].new_text) < 20


def test_no_edit_boundary_splits_a_crlf_pair() -> None:
    old = "a\r\nb\r\nc\r\n"
    new = "a\nb\r\nc\r\n"  # only the first terminator changes
    for edit in text_edits(old, new) or []:
        for pos in (edit.range.start, edit.range.end):
            line = old.split("\r\n")[pos.line] if pos.line < 3 else ""
            assert pos.character <= _utf16_len(line)


def test_timeout_falls_back_to_one_exact_whole_document_edit() -> None:
    old = "".join(f"{i} alpha beta\n" for i in range(3000))
    new = "".join(f"{i * 7} gamma beta\n" for i in range(3000))
    edits = text_edits(old, new, timeout_s=1e-9)
    assert edits is not None and len(edits) == 1
    assert edits[0].range.start == lsp.Position(line=0, character=0)
    assert apply_text_edits(old, edits) == new


def test_whole_document_edit_covers_the_last_line_without_newline() -> None:
    edit = whole_document_edit("ab\r\ncd😀", "x")
    assert edit.range.end == lsp.Position(line=1, character=4)


_alphabet = st.sampled_from(["a", "b", " ", "\n", "\r\n", "\r", "é", "😀", "字", "\t"])
_texts = st.lists(_alphabet, max_size=40).map("".join)


@settings(max_examples=150, deadline=None)
@given(old=_texts, new=_texts)
def test_property_edits_reproduce_any_text(old: str, new: str) -> None:
    edits = text_edits(old, new)
    if old == new:
        assert edits is None
    else:
        assert edits is not None
        assert apply_utf16_edits(old, edits) == new
        assert apply_text_edits(old, edits) == new
