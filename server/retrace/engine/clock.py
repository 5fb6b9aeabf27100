"""The engine's one wall clock: every wall-clock time the engine records or compares against
(a checkpoint's ``createdAt``, the time part of a new id, retention's age cutoff) is read here.

The wall clock can be wrong, and can jump back or forward between two readings: nothing the
engine orders or keeps may depend on it being right (ids and order come from the local
creation sequence, see :mod:`retrace.engine.ids` and :mod:`retrace.engine.history.order`).
Tests move it by monkeypatching :func:`now` on this module: the engine reads it only through
:func:`utc_now` and :func:`now_us`, which look :func:`now` up at call time.
Durations use ``time.perf_counter`` and are not this module's business.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def now() -> datetime:
    """The current wall-clock time (aware, UTC)."""
    return datetime.now(UTC)


def utc_now() -> datetime:
    """:func:`now`, as it is at call time (the seam tests patch)."""
    return now()


def now_us() -> int:
    """:func:`now` as integer microseconds since the Unix epoch."""
    return (now() - _UNIX_EPOCH) // _MICROSECOND


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
