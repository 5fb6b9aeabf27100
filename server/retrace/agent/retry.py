"""How long to wait before retrying a failed model call (pure; table-tested).

The API says how long in ``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds, or an
HTTP date) on a 429 (rate limit), 529 (overloaded) or 503; that wait is honoured, up to
``max_wait``: a longer one is not waited for (the call fails and the user is told). Without such
a header, exponential backoff: ``base * 2**attempt``, cut to ``max_wait``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def asked_wait_s(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait (seconds, ≥ 0) a response's headers ask for, ``None`` if none or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_delay(asked: float | None, attempt: int, base_s: float, max_wait_s: float) -> float | None:
    """Seconds to wait before retry number ``attempt`` (0-based); ``None``: do not retry (the API
    asks for longer than ``max_wait_s``)."""
    if asked is None:
        return float(min(base_s * 2**attempt, max_wait_s))
    if asked > max_wait_s:
        return None
    return asked
