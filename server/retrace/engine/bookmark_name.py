"""THE rule for a bookmark's name (a named checkpoint): what the editor, the journal's
``checkpointName`` events and their replay accept.

A name is one line a person typed: surrounding white space is dropped; it may hold at most
:data:`MAX_NAME_CHARS` characters and no control, format (bidirectional overrides, zero-width
characters), line or paragraph separator character, so a name can neither break a line of the
timeline nor disguise itself. An empty name means "no name" (naming a checkpoint with it removes
its bookmark); whether an empty name is acceptable is the caller's decision.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint

MAX_NAME_CHARS = 100
"""The longest name, in characters (after white space is stripped)."""

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format, surrogate, private-use, unassigned, line and paragraph separators."""


class BookmarkNameError(RetraceError):
    """A bookmark name the rule refuses, with the reason in one line."""


def clean_name(raw: str) -> str:
    """``raw`` as a stored name ("" for an empty or blank one); raises
    :class:`BookmarkNameError` saying why it cannot be a name."""
    name = raw.strip()
    if len(name) > MAX_NAME_CHARS:
        raise BookmarkNameError(
            f"a bookmark name may have at most {MAX_NAME_CHARS} characters, not {len(name)}"
        )
    for char in name:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            raise BookmarkNameError(
                f"a bookmark name may not contain the character U+{ord(char):04X} "
                f"({unicodedata.name(char, 'control character').lower()})"
            )
    return name


def required_name(raw: str) -> str:
    """:func:`clean_name` for a new bookmark: an empty or blank name is refused too."""
    name = clean_name(raw)
    if not name:
        raise BookmarkNameError("a bookmark needs a name (it is empty)")
    return name


def label_name(cp: Checkpoint) -> str:
    """The bookmark name a never-named checkpoint carries: a mark's label (its first non-blank
    line, cut to the name's length), ``""`` for anything else."""
    if cp.kind != "manual" or "task" in cp.meta:
        return ""
    line = next((ln.strip() for ln in cp.label.splitlines() if ln.strip()), "")
    return line if len(line) <= MAX_NAME_CHARS else line[: MAX_NAME_CHARS - 1] + "…"


def bookmark_of(cp: Checkpoint, names: Mapping[str, str]) -> str | None:
    """``cp``'s bookmark name, or ``None``: not a bookmark. ``names``: the names given (``""``:
    removed)."""
    given = names.get(cp.id)
    name = label_name(cp) if given is None else given
    return name or None


def bookmarks(checkpoints: Iterable[Checkpoint], names: Mapping[str, str]) -> dict[str, str]:
    """Checkpoint id → bookmark name, for every bookmark among ``checkpoints``."""
    out: dict[str, str] = {}
    for cp in checkpoints:
        if cp.kind == "manual" or cp.id in names:  # the only candidates: a pass of cheap tests
            name = bookmark_of(cp, names)
            if name is not None:
                out[cp.id] = name
    return out
