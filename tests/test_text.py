"""One rule for "is this text?": every place that decides it agrees with :mod:`retrace.text`."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from retrace.agent.tools.read_file import looks_binary
from retrace.engine.line_stats import line_stats
from retrace.engine.merge import merge3
from retrace.lsp.services import editor_edit, timeline
from retrace.text import decode_text, is_text

# Texts with and without NUL anywhere (also past the first 8 KiB), and raw bytes that are
# mostly not UTF-8.
_texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
contents = st.one_of(
    st.binary(max_size=64),
    _texts.map(lambda t: t.encode("utf-8")),
    st.tuples(_texts, st.integers(0, 10_000)).map(lambda p: ("a" * p[1] + p[0]).encode("utf-8")),
    st.tuples(st.integers(0, 10_000), st.binary(max_size=4)).map(lambda p: b"x" * p[0] + p[1]),
)


def reference(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return 0 not in data


@given(contents)
def test_the_rule(data: bytes) -> None:
    assert is_text(data) == reference(data)
    text = decode_text(data)
    assert (text is not None) == reference(data)
    if text is not None:
        assert text.encode("utf-8") == data


@given(contents)
@example(b"a" * 9000 + b"\x00")  # NUL past the first 8 KiB
@example(b"\x00")
@example("é".encode())
@example(b"\xff")
def test_every_decider_agrees(data: bytes) -> None:
    text = is_text(data)
    assert looks_binary(data) == (not text)  # read_file / search_text
    assert (merge3(data, data, data) is not None) == text  # engine merge
    assert line_stats(data, data)[2] == (not text)  # engine line statistics
    assert (editor_edit.editor_text(data) is not None) == text  # editor restore
    assert timeline._decode(data).binary == (not text)  # timeline file view
