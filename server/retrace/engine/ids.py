"""Checkpoint and session ids: 12 lowercase Crockford-base32 chars, unique and sortable.

10 chars of microseconds since 2024-01-01 (enough for 35 years) + 2 random chars. Ids from one
process are strictly increasing even within one microsecond, so sorting ids gives commit order.
"""

from __future__ import annotations

import secrets

from retrace.engine import clock

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_EPOCH_US = 1_704_067_200_000_000


def _b32(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))


def _decode_time(cid: str) -> int:
    n = 0
    for ch in cid[:10]:
        i = ALPHABET.find(ch)
        if i < 0:
            return 0
        n = n * 32 + i
    return n


class IdGenerator:
    def __init__(self) -> None:
        self._last = 0

    def observe(self, existing_id: str) -> None:
        """Make later ids sort after ``existing_id`` (e.g. after a clock step back)."""
        self._last = max(self._last, _decode_time(existing_id))

    def new(self) -> str:
        now = clock.now_us() - _EPOCH_US
        t = max(now, self._last + 1)
        self._last = t
        return _b32(t, 10) + _b32(secrets.randbits(10), 2)
