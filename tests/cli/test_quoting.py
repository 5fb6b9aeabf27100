"""The one quoting rule for names and text that reach a terminal (``retrace.text``): a table of
git's own examples and a property over every string a file name can decode to."""

from __future__ import annotations

import os
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrace.text import quote_name, shell_word, terminal_text

UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unquote(text: str) -> bytes:
    """The bytes a quoted name stands for (git's C-style unquoting), for the round trip."""
    if not text.startswith('"'):
        return os.fsencode(text)
    assert text.endswith('"') and len(text) >= 2
    body, out, i = text[1:-1], bytearray(), 0
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
        elif body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
    return bytes(out)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a.txt", "a.txt"),
        ("dir/with space.txt", "dir/with space.txt"),
        ("naïve/日本語.md", "naïve/日本語.md"),
        ("emoji-😀.txt", "emoji-😀.txt"),
        ("tab\there", '"tab\\there"'),
        ("line\nbreak", '"line\\nbreak"'),
        ("cr\rx", '"cr\\rx"'),
        ('quote"d', '"quote\\"d"'),
        ("back\\slash", '"back\\\\slash"'),
        ("esc\x1b[2K", '"esc\\033[2K"'),
        ("del\x7f", '"del\\177"'),
        ("c1\x9b", '"c1\\302\\233"'),
        ("\u202egnp.exe", '"\\342\\200\\256gnp.exe"'),
        ("zero\u200bwidth", '"zero\\342\\200\\213width"'),
        ("sep\u2028x", '"sep\\342\\200\\250x"'),
        (os.fsdecode(b"bad\xff.txt"), '"bad\\377.txt"'),
    ],
)
def test_quote_table(name: str, shown: str) -> None:
    assert quote_name(name) == shown


def test_quoting_agrees_with_git_for_ascii_controls(tmp_path: Path) -> None:
    """For what git quotes with ``core.quotePath=false`` (controls, ``"``, ``\\``), the same text."""
    names = ["tab\there", "nl\nx", 'q"x', "b\\s", "e\x1b[2K", "d\x7f", "plain.txt", "naïve.md"]
    for n in names:
        (tmp_path / n).write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    out = subprocess.run(
        ["git", "-c", "core.quotePath=false", "ls-files", "--others"],
        cwd=tmp_path, capture_output=True, check=True, env=env,
    ).stdout.decode()  # fmt: skip
    git_shown = set(out.splitlines())
    assert git_shown == {quote_name(n) for n in names}


names = st.binary(min_size=1, max_size=40).map(os.fsdecode) | st.text(min_size=1, max_size=40)


@given(names)
def test_quoted_names_are_safe_and_round_trip(name: str) -> None:
    shown = quote_name(name)
    assert not [c for c in shown if unicodedata.category(c) in UNSAFE], repr(shown)
    errors = "surrogateescape" if _escaped(name) else "surrogatepass"
    assert unquote(shown) == name.encode("utf-8", errors=errors)


def _escaped(name: str) -> bool:
    return any("\udc80" <= c <= "\udcff" for c in name)


@given(st.text(max_size=60) | st.binary(max_size=60).map(os.fsdecode))
def test_free_text_is_safe(text: str) -> None:
    one_line = terminal_text(text)
    assert not [c for c in one_line if unicodedata.category(c) in UNSAFE]
    multi = terminal_text(text, keep_newlines=True)
    assert not [c for c in multi if unicodedata.category(c) in UNSAFE and c not in "\n\t"]


@given(st.text(min_size=1, max_size=30) | st.binary(min_size=1, max_size=30).map(os.fsdecode))
def test_shell_words_are_safe_and_bash_reads_them_back(text: str) -> None:
    word = shell_word(text)
    assert not [c for c in word if unicodedata.category(c) in UNSAFE]
    if re.search(r"[\x00]", text):
        return  # a NUL can be neither a file name nor an argument
    got = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
    assert got == text.encode("utf-8", errors="surrogateescape" if _escaped(text) else "surrogatepass")
