"""Hunks of one text file between a checkpoint and now, and the patch that restores one of them.

Pure (no engine, no I/O): the server's ``retrace/restore/hunks`` and ``retrace/restore/hunk``
(:mod:`retrace.lsp.services.restore_hunk`) read the two texts and hand them here.

Contracts:

- Lines keep their own endings (``\\n``, ``\\r\\n``, a lone ``\\r`` stays inside its line; only
  ``\\n`` ends a line), and the last line may have none: joining the lines gives the text back
  byte for byte, so CRLF files and files without a final newline round-trip exactly.
- A hunk is one maximal run of differing lines (``difflib`` opcodes, no junk heuristic): base
  lines ``[base_start, base_start + base_count)`` became current lines
  ``[current_start, current_start + current_count)`` (0-based). Its id,
  ``"<base_start>,<base_count>,<current_start>,<current_count>"``, names it within one pair of
  texts only: a request carries the hash of the current text it was computed from
  (:func:`text_hash`), and a different current text is a :class:`HunkConflict`, never a patch
  applied to lines that moved.
- :func:`revert` puts the base lines of one hunk back and leaves every other line as it is;
  :func:`reapply` is its inverse (the current lines back). Reverting every hunk gives the base.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from retrace.engine.errors import RetraceError

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


class HunkConflict(RetraceError):  # noqa: N818 (contract names)
    """The file is not the text the hunk was computed from (changed since): nothing written."""

    code = "hunkConflict"


class UnknownHunk(RetraceError):  # noqa: N818 (contract names)
    """No hunk with that id between these two texts."""

    code = "unknownHunk"


@dataclass(frozen=True)
class Hunk:
    base_start: int
    base_count: int
    current_start: int
    current_count: int
    base_lines: tuple[str, ...]
    current_lines: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.base_start},{self.base_count},{self.current_start},{self.current_count}"


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its ending; ``"".join(split_lines(t)) == t``."""
    return _LINE.findall(text)


def text_hash(text: str) -> str:
    """The hash a hunk request names its current text by (sha256 of the UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def hunks(base: str, current: str) -> list[Hunk]:
    """The hunks turning ``base`` into ``current``, in file order."""
    a, b = split_lines(base), split_lines(current)
    out: list[Hunk] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Hunk(i1, i2 - i1, j1, j2 - j1, tuple(a[i1:i2]), tuple(b[j1:j2])))
    return out


def find(base: str, current: str, hunk_id: str) -> Hunk:
    """The hunk ``hunk_id`` between these texts; :class:`UnknownHunk` when there is none."""
    for h in hunks(base, current):
        if h.id == hunk_id:
            return h
    raise UnknownHunk(f"no hunk {hunk_id!r} between the checkpoint and the current text")


def check_current(current: str, expected_hash: str, path: str) -> None:
    """Refuse (:class:`HunkConflict`) when ``current`` is not the text the caller saw."""
    if text_hash(current) != expected_hash:
        raise HunkConflict(f"{path} changed since its hunks were computed: nothing was restored (look again)")


def revert(current: str, hunk: Hunk) -> str:
    """``current`` with ``hunk``'s base lines back in place of its current lines."""
    lines = split_lines(current)
    end = hunk.current_start + hunk.current_count
    if tuple(lines[hunk.current_start : end]) != hunk.current_lines:
        raise HunkConflict("the hunk's lines are not where it says in this text")
    return "".join([*lines[: hunk.current_start], *hunk.base_lines, *lines[end:]])


def reapply(reverted: str, hunk: Hunk) -> str:
    """The inverse of :func:`revert`: ``hunk``'s current lines back in place of its base lines."""
    lines = split_lines(reverted)
    end = hunk.current_start + hunk.base_count
    if tuple(lines[hunk.current_start : end]) != hunk.base_lines:
        raise HunkConflict("the hunk's base lines are not where it says in this text")
    return "".join([*lines[: hunk.current_start], *hunk.current_lines, *lines[end:]])


def revert_all(base: str, current: str) -> str:
    """Every hunk reverted (last first, so earlier positions hold): the base text."""
    text = current
    for h in reversed(hunks(base, current)):
        text = revert(text, h)
    return text
