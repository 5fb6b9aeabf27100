"""THE definition of "is this content text?", its decoding, and how names and text reach a
terminal (:func:`quote_name`, :func:`terminal_text`).

Content is text when it is valid UTF-8 and holds no NUL byte; anything else is binary. Every
part of Retrace that shows, diffs, merges, edits, searches or counts lines of a file asks
:func:`decode_text`, so a file is text (or binary) everywhere at once: in the agent's tools, in
the engine's merge and line statistics, in the timeline's file views and in an editor restore.
"""

from __future__ import annotations

import re
import shlex
import unicodedata

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


# --------------------------------------------------------------------------- terminal output
#
# Names and text that reach a terminal. A file name may hold any byte but ``/`` and NUL: a
# carriage return, ``ESC [2K`` or a newline inside one could erase a line of a restore preview and
# print a fake one. Human-readable output therefore writes every name through :func:`quote_name`
# (git's ``core.quotePath`` rule) and every other piece of text from stored or received data
# through :func:`terminal_text`; ``--json`` output stays exact and never goes through here.
#
# Unlike git's default (``core.quotePath=true``, which quotes every non-ASCII byte), printable
# valid UTF-8 stays readable: a name in Cyrillic, CJK or with accents is the user's name, and
# octal soup would hide it without making anything safer. What is quoted is what can move the
# cursor, erase, reorder or hide text: C0 and C1 controls, DEL, Unicode format characters (bidi
# overrides such as U+202E, zero-width characters), line and paragraph separators, and bytes that
# are not valid UTF-8 (carried as lone surrogates by ``surrogateescape``).

_NAMED_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def unsafe_char(ch: str) -> bool:
    """Whether ``ch`` may not reach a terminal as itself (a control, format or separator
    character, or a lone surrogate standing for a byte that is not valid UTF-8)."""
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def _escape(ch: str) -> str:
    named = _NAMED_ESCAPES.get(ch)
    if named is not None:
        return named
    # Git's form: the character's bytes in octal; a surrogate from ``surrogateescape`` is the
    # original byte.
    data = ch.encode(ENCODING, errors="surrogateescape" if "\udc80" <= ch <= "\udcff" else "surrogatepass")
    return "".join(f"\\{b:03o}" for b in data)


_ASCII_UNSAFE = re.compile(r'[\x00-\x1f\x7f"\\]')
"""For an ASCII name (the common case) the whole test is this search."""


def quote_name(name: str) -> str:
    """``name`` as a terminal may show it: unchanged when every character is safe and it holds no
    ``"`` or ``\\``; otherwise in double quotes with C-style escapes (``\\n``, ``\\t``, ``\\"``,
    ``\\\\``, the rest as octal bytes), as git quotes a path under ``core.quotePath``."""
    if name.isascii() and _ASCII_UNSAFE.search(name) is None:
        return name
    if not any(ch in _NAMED_ESCAPES or unsafe_char(ch) for ch in name):
        return name
    return '"' + "".join(_escape(ch) if ch in _NAMED_ESCAPES or unsafe_char(ch) else ch for ch in name) + '"'


def terminal_text(text: str, *, keep_newlines: bool = False) -> str:
    """Free text (a label, a reason, an error, the model's words) with every unsafe character
    escaped as :func:`quote_name` would, without quotes; ``keep_newlines`` keeps ``\\n`` and
    ``\\t`` (multi-line text whose line breaks are its own)."""
    kept = "\n\t" if keep_newlines else ""
    return "".join(_escape(ch) if unsafe_char(ch) and ch not in kept else ch for ch in text)


def shell_word(text: str) -> str:
    """``text`` as one POSIX shell word a user can paste back: single-quoted, or bash's
    ``$'...'`` with the escapes of :func:`quote_name` when it holds an unsafe character."""
    if not any(unsafe_char(ch) for ch in text):
        return shlex.quote(text)
    body = "".join(
        _escape(ch) if unsafe_char(ch) or ch == "\\" else "\\'" if ch == "'" else ch for ch in text
    )
    return f"$'{body}'"


def truncate_utf8_lines(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` cut at a line boundary so its UTF-8 size stays within ``max_bytes``, and whether
    it was cut (a patch shown to the editor or to an MCP client: never half a line)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text, False
    cut = encoded[:max_bytes].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    return (cut[: newline + 1] if newline >= 0 else ""), True
