"""Checkpoint and session ids: 12 lowercase Crockford-base32 chars, unique.

10 chars of microseconds since 2024-01-01 (35 years) + 2 random chars. An id is a name, not a
position: the order of checkpoints is their local creation order (:mod:`.history.order`), so
nothing breaks when the clock is wrong or when another machine's ids are odd. The generator
still keeps the ids it makes increasing while it can (ids read in commit order are easier on
people): it continues after the newest *local* id it was shown (:meth:`IdGenerator.observe`),
never after a foreign one. When the time part cannot grow any more (a clock past 2059, or
local ids already at the top of the range) the id is random instead of wrapping around, and
every id is checked against the ids the store already holds (a collision is retried).

Ids read from journals are untrusted input: :func:`valid_checkpoint_id` is the one format rule.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Container, Iterable

from retrace.engine.clock import now_us

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_EPOCH_US = 1_704_067_200_000_000
_TIME_CHARS = 10
_MAX_TIME = 32**_TIME_CHARS - 1
_CHECKPOINT_ID = re.compile(r"[0-9a-hjkmnp-tv-z]{12}")
_TRIES = 64


def valid_checkpoint_id(value: object) -> bool:
    """Is ``value`` a checkpoint id this engine could have made (12 chars of :data:`ALPHABET`)?"""
    return isinstance(value, str) and _CHECKPOINT_ID.fullmatch(value) is not None


def _b32(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))


def decode_time(cid: str) -> int:
    """The time part of an id (0 when it is not one of ours)."""
    if not valid_checkpoint_id(cid):
        return 0
    n = 0
    for ch in cid[:_TIME_CHARS]:
        n = n * 32 + ALPHABET.index(ch)
    return n


class IdGenerator:
    def __init__(self) -> None:
        self._last = 0

    def observe(self, local_id: str) -> None:
        """Make later ids sort after ``local_id``, an id this store made (e.g. after a clock step
        back). Never call it with another machine's id: its clock is not ours."""
        self._last = max(self._last, decode_time(local_id))

    def observe_all(self, local_ids: Iterable[str]) -> None:
        """:meth:`observe` of every id, in one pass: the alphabet is in ASCII order, so the
        greatest time part of the valid ids is the one with the greatest time value."""
        newest = max((c[:_TIME_CHARS] for c in local_ids if valid_checkpoint_id(c)), default=None)
        if newest is not None:
            self.observe(newest + ALPHABET[0] * (12 - _TIME_CHARS))

    def new(self, taken: Container[str] = ()) -> str:
        """A fresh id, not in ``taken`` (the ids the store already holds)."""
        for _ in range(_TRIES):
            t = max(now_us() - _EPOCH_US, self._last + 1)
            if t <= _MAX_TIME:
                self._last = t
                cid = _b32(t, _TIME_CHARS) + _b32(secrets.randbits(10), 2)
            else:  # the time part is full: a random id (order never depended on it)
                cid = _b32(secrets.randbits(60), 12)
            if cid not in taken:
                return cid
        raise RuntimeError("could not make a checkpoint id that is not taken")  # pragma: no cover
