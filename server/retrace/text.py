"""THE definition of "is this content text?", and its decoding.

Content is text when it is valid UTF-8 and holds no NUL byte; anything else is binary. Every
part of Retrace that shows, diffs, merges, edits, searches or counts lines of a file asks
:func:`decode_text`, so a file is text (or binary) everywhere at once: in the agent's tools, in
the engine's merge and line statistics, in the timeline's file views and in an editor restore.
"""

from __future__ import annotations

ENCODING = "utf-8"


def decode_text(data: bytes) -> str | None:
    """The content as text, or ``None`` when it is binary (not UTF-8, or contains NUL)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode(ENCODING)
    except UnicodeDecodeError:
        return None


def is_text(data: bytes) -> bool:
    return decode_text(data) is not None
