"""Small statistics: latency percentiles and per-file line counts of a change."""

from __future__ import annotations

from diff_match_patch import diff_match_patch

from retrace.engine.models import LatencySummary
from retrace.text import decode_text

LINE_STATS_MAX_BYTES = 1024 * 1024
"""Line statistics are skipped (0/0) above this size: counting must not dominate a capture."""


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summarize(values: list[float]) -> LatencySummary:
    v = sorted(values)
    return LatencySummary(
        count=len(v),
        p50_ms=round(percentile(v, 0.50), 3),
        p95_ms=round(percentile(v, 0.95), 3),
        p99_ms=round(percentile(v, 0.99), 3),
    )


def line_stats(old: bytes | None, new: bytes | None) -> tuple[int, int, bool]:
    """(additions, deletions, binary) between two contents (``None`` = absent)."""
    if (old is not None and len(old) > LINE_STATS_MAX_BYTES) or (
        new is not None and len(new) > LINE_STATS_MAX_BYTES
    ):
        return 0, 0, False
    a = decode_text(old) if old is not None else ""
    b = decode_text(new) if new is not None else ""
    if a is None or b is None:
        return 0, 0, True
    if not a:
        return len(b.splitlines()), 0, False
    if not b:
        return 0, len(a.splitlines()), False
    la = a.splitlines(keepends=True)
    lb = b.splitlines(keepends=True)
    # Common leading/trailing lines never count (diff_main strips them too, so the result is
    # the same); finding them by C-level slice comparison leaves only the edited middle for
    # the Python-speed part below (a formatter touching 100 files changes a few lines each).
    n = min(len(la), len(lb))
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if la[:mid] == lb[:mid]:
            lo = mid
        else:
            hi = mid - 1
    pre = lo
    lo, hi = 0, n - pre
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if la[len(la) - mid :] == lb[len(lb) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    la = la[pre : len(la) - lo]
    lb = lb[pre : len(lb) - lo]
    if not la or not lb:
        return len(lb), len(la), False
    # Lines → one character each (as diff_match_patch's linesToChars, but at dict speed), then
    # a character diff counts whole lines.
    index: dict[str, int] = {}
    chars_a = "".join([chr(index.setdefault(line, len(index))) for line in la])
    chars_b = "".join([chr(index.setdefault(line, len(index))) for line in lb])
    if len(index) >= 0x10FFFF:
        return 0, 0, False
    diffs = diff_match_patch().diff_main(chars_a, chars_b, False)
    adds = dels = 0
    for op, text in diffs:
        if op == 1:
            adds += len(text)
        elif op == -1:
            dels += len(text)
    return adds, dels, False
