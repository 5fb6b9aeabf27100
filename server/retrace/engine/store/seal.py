"""The per-line checksum of the journal format (v2): every line is self-verifying.

A line written by this version is a JSON object whose LAST member is ``"lineSum"``: 16 hex
digits, the CRC-32 and then the Adler-32 of the line's bytes before that member (everything up
to the ``,`` that opens it). So a line checks itself with no context — whatever file it sits in
(a session journal, a bucket segment, a quarantine copy) — by bytes alone, before any JSON is
parsed. CRC-32 detects with certainty every single-bit flip and every damaged run of up to 32
bits (so any one substituted byte); the pair makes other random damage go unnoticed only by
chance (about 2⁻⁶⁰). Both run in C at memory speed: a journal of 10,000 checkpoints is checked
on every open, and a cryptographic hash cost four times as much per line here.

The rule for lines without a checksum (journals written before v2 must be read forever):

* a line that carries ``"v": 2`` or more must carry a valid ``lineSum`` (this version writes both);
* a line with no ``lineSum`` is a *legacy* line: accepted only when it says ``v`` 1 (or nothing)
  AND no sealed line came before it in the same journal (:class:`SealGuard`). An old journal
  that this version appended to is a legacy prefix and a sealed rest; a legacy-looking line
  after a sealed one is damage. So stripping the checksum off a line (to edit it unseen) is no
  escape hatch in a journal written by this version: it is reported like a flipped bit.

This is tamper-evidence against damage (bit rot, torn copies, a forged line that did not redo
the sum), not a signature: whoever can write a journal can recompute a sum. Bucket objects are
authenticated separately (``sync/``).
"""

from __future__ import annotations

import zlib
from typing import Literal

SUM_KEY = "lineSum"
_PREFIX = b',"' + SUM_KEY.encode() + b'":"'
_HEX = 16
_SUFFIX_LEN = len(_PREFIX) + _HEX + 2  # ,"lineSum":"<16 hex>"}
_HEXDIGITS = frozenset(b"0123456789abcdef")

LineSeal = Literal["sealed", "legacy", "broken"]
"""``sealed``: the checksum is present and matches; ``legacy``: no checksum (see the module's
rule); ``broken``: a checksum that does not match, or a malformed one."""


def _sum(covered: memoryview | bytes) -> bytes:
    return b"%08x%08x" % (zlib.crc32(covered), zlib.adler32(covered))


def seal_line(body: bytes) -> bytes:
    """``body`` (one compact JSON object, no newline, not carrying ``lineSum``) with its
    checksum appended as the object's last member."""
    if len(body) < 3 or body[:1] != b"{" or body[-1:] != b"}":
        raise ValueError("a journal line is a non-empty JSON object")
    head = memoryview(body)[:-1]
    return bytes(head) + _PREFIX + _sum(head) + b'"}'


def check_line(raw: bytes) -> LineSeal:
    """Whether line ``raw`` (no newline) carries a valid checksum (by bytes; JSON unparsed)."""
    # No checksum where one belongs: "legacy" here, and the legacy rule (SealGuard: a line of
    # ``v`` 2, as every line this version writes says, or one after a sealed line) makes it
    # damage. So a damaged checksum member (a flipped "lineSum" key) is found there too.
    n = len(raw)
    if n <= _SUFFIX_LEN or raw[-2:] != b'"}':
        return "legacy"
    start = n - _SUFFIX_LEN
    if raw[start : start + len(_PREFIX)] != _PREFIX:
        return "legacy"
    digest = raw[n - 2 - _HEX : n - 2]
    if not _HEXDIGITS.issuperset(digest):
        return "broken"
    return "sealed" if _sum(memoryview(raw)[:start]) == digest else "broken"


def verify_line(raw: bytes) -> bool:
    """``True`` when ``raw`` is a sealed line whose checksum matches (legacy lines: ``False``;
    readers of whole journals apply the legacy rule through :class:`SealGuard`)."""
    return check_line(raw) == "sealed"


class SealGuard:
    """The legacy rule over one journal read in order: a line without a checksum is accepted
    only before the journal's first sealed line, and only when it does not claim ``v`` ≥ 2."""

    __slots__ = ("sealed_seen",)

    def __init__(self, sealed_seen: bool = False) -> None:
        self.sealed_seen = sealed_seen

    def pass_over(self, raw: bytes) -> None:
        """A line read past without being decoded (it cannot hold an event the reader wants):
        the rule's state still moves on, since a checksummed line makes every later line without
        a checksum damage."""
        if not self.sealed_seen and check_line(raw) == "sealed":
            self.sealed_seen = True

    def problem(self, seal: LineSeal, version: object) -> str | None:
        """Why a parsed line with seal state ``seal`` and ``v`` = ``version`` is damage, or
        ``None`` (updates the state)."""
        if seal == "sealed":
            self.sealed_seen = True
            return None
        if seal == "broken":
            return "its checksum does not match its content (the line was changed or damaged)"
        if isinstance(version, int) and not isinstance(version, bool) and version >= 2:
            return "its checksum is missing (a line of the checksummed format)"
        if version is not None and version != 1:
            return "its checksum is missing and its format version is not 1"
        if self.sealed_seen:
            return "its checksum is missing after checksummed lines (removed or damaged)"
        return None
