"""Minimal LSP ``TextEdit``s that turn one text into another (diff-match-patch).

Contract: applying the returned edits to ``old`` (positions interpreted in the negotiated
position encoding, UTF-16 by default, all ranges relative to ``old``) yields exactly ``new`` —
line endings, a missing final newline and characters outside the Basic Multilingual Plane
included. ``None`` means "no change" (an empty list would mean the same to a client, but callers
must tell "nothing to do" apart from "do nothing"). When the diff runs out of
its time budget the result is one whole-document edit, still exact, just not minimal.

A ``\\r\\n`` pair is diffed as ONE unit, so no edit ever starts or ends between ``\\r`` and
``\\n`` (a position inside a line terminator is invalid in LSP and editors reject or mangle it).
"""

from __future__ import annotations

import bisect
import time

from diff_match_patch import diff_match_patch
from lsprotocol import types as lsp
from pygls.workspace.position_codec import PositionCodec

DEFAULT_TIMEOUT_S = 0.5
_UTF16 = PositionCodec()


def _sentinel(*texts: str) -> str:
    """A private-use character absent from every text, to stand for ``\\r\\n``."""
    for code in range(0xE000, 0xF8FF):
        char = chr(code)
        if all(char not in text for text in texts):
            return char
    # Both texts use the whole private-use area: fall back to a noncharacter.
    return "\ufdd0"


class _Lines:
    """Offset → LSP position in a text whose line breaks are ``\\n``, ``\\r`` or the sentinel."""

    def __init__(self, text: str, crlf: str, codec: PositionCodec) -> None:
        self.text = text
        self.codec = codec
        self.starts = [0]
        for index, char in enumerate(text):
            if char in ("\n", "\r", crlf):
                self.starts.append(index + 1)

    def position(self, offset: int) -> lsp.Position:
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        return lsp.Position(line=line, character=self.codec.client_num_units(self.text[start:offset]))


def whole_document_edit(old: str, new: str, codec: PositionCodec = _UTF16) -> lsp.TextEdit:
    """One edit replacing all of ``old`` by ``new``."""
    crlf = _sentinel(old)
    mapped = old.replace("\r\n", crlf)
    end = _Lines(mapped, crlf, codec).position(len(mapped))
    return lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=new)


def text_edits(
    old: str,
    new: str,
    codec: PositionCodec = _UTF16,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[lsp.TextEdit] | None:
    """Edits turning ``old`` into ``new``; ``None`` when they are equal."""
    if old == new:
        return None
    crlf = _sentinel(old, new)
    a = old.replace("\r\n", crlf)
    b = new.replace("\r\n", crlf)

    dmp = diff_match_patch()
    dmp.Diff_Timeout = timeout_s
    started = time.monotonic()
    diffs = dmp.diff_main(a, b)
    if timeout_s > 0 and time.monotonic() - started >= timeout_s:
        return [whole_document_edit(old, new, codec)]
    dmp.diff_cleanupSemantic(diffs)

    lines = _Lines(a, crlf, codec)
    edits: list[lsp.TextEdit] = []
    offset = 0
    pending_start: int | None = None
    pending_text: list[str] = []

    def flush(end: int) -> None:
        nonlocal pending_start, pending_text
        if pending_start is None:
            return
        edits.append(
            lsp.TextEdit(
                range=lsp.Range(start=lines.position(pending_start), end=lines.position(end)),
                new_text="".join(pending_text).replace(crlf, "\r\n"),
            )
        )
        pending_start, pending_text = None, []

    for op, chunk in diffs:
        if op == diff_match_patch.DIFF_EQUAL:
            flush(offset)
            offset += len(chunk)
            continue
        if pending_start is None:
            pending_start = offset
        if op == diff_match_patch.DIFF_DELETE:
            offset += len(chunk)
        else:
            pending_text.append(chunk)
    flush(offset)
    return edits


def apply_text_edits(text: str, edits: list[lsp.TextEdit], codec: PositionCodec = _UTF16) -> str:
    """Apply non-overlapping edits (ranges relative to ``text``) the way an editor does.

    Used by tests and by the headless path's self-check; positions are in ``codec`` units."""
    crlf = _sentinel(text)
    mapped = text.replace("\r\n", crlf)
    lines = _Lines(mapped, crlf, codec)

    def offset_of(position: lsp.Position) -> int:
        if position.line >= len(lines.starts):
            return len(mapped)
        start = lines.starts[position.line]
        end = lines.starts[position.line + 1] if position.line + 1 < len(lines.starts) else len(mapped)
        units = 0
        index = start
        while index < end and units < position.character:
            char = mapped[index]
            if char in ("\n", "\r", crlf):
                break
            units += codec.client_num_units(char)
            index += 1
        return index

    spans = sorted(
        ((offset_of(e.range.start), offset_of(e.range.end), e.new_text) for e in edits),
        key=lambda span: (span[0], span[1]),
    )
    out: list[str] = []
    cursor = 0
    for start, end, new_text in spans:
        if start < cursor:
            raise ValueError(f"overlapping edits at offset {start}")
        out.append(mapped[cursor:start].replace(crlf, "\r\n"))
        out.append(new_text)
        cursor = end
    out.append(mapped[cursor:].replace(crlf, "\r\n"))
    return "".join(out)
