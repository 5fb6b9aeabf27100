"""Small statistics: latency percentiles, per-file line counts of a change, and the bounded line
diff they and the display diff share (diff-match-patch over one character per distinct line, cut
by an explicit deadline; a cut result says it is approximate)."""

from __future__ import annotations

import bisect
import difflib
import time
from collections import Counter
from typing import Literal, NamedTuple

from diff_match_patch import diff_match_patch

from retrace.engine.models import LatencySummary
from retrace.text import decode_text

LINE_STATS_MAX_BYTES = 1024 * 1024
"""Line statistics are skipped (0/0, approximate) above this size: counting must not dominate a
capture."""
EXACT_BELOW_LINES = 16
"""A line diff whose changed middle has at most this many lines (both sides) is always exact,
whatever the budget says: it costs microseconds, and a machine busy enough to have spent the
capture's budget elsewhere must not turn a three-line change's counts into an estimate."""
FILE_DIFF_TIMEOUT_S = 1.0
"""Budget of one file's line diff when the caller gives no deadline (e.g. a diff between two
checkpoints): past it the counts are an estimate, marked ``approximate``."""


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


OpTag = Literal["replace", "delete", "insert", "equal"]
Opcode = tuple[OpTag, int, int, int, int]


class LineStats(NamedTuple):
    additions: int
    deletions: int
    binary: bool
    approximate: bool = False
    """The time budget ran out before an exact line diff: the counts are an estimate (their
    difference, the net line change, is still exact)."""


def line_stats(old: bytes | None, new: bytes | None, *, deadline: float | None = None) -> LineStats:
    """Added and deleted lines between two contents (``None`` = absent), within a time budget.

    ``deadline`` is a :func:`time.perf_counter` value; without one the diff gets
    :data:`FILE_DIFF_TIMEOUT_S`. When the budget runs out the counts come from a multiset
    estimate (lines of one side missing from the other) and are marked ``approximate``."""
    if deadline is None:
        deadline = time.perf_counter() + FILE_DIFF_TIMEOUT_S
    if (old is not None and len(old) > LINE_STATS_MAX_BYTES) or (
        new is not None and len(new) > LINE_STATS_MAX_BYTES
    ):
        return LineStats(0, 0, False, approximate=True)
    a = decode_text(old) if old is not None else ""
    b = decode_text(new) if new is not None else ""
    if a is None or b is None:
        return LineStats(0, 0, True)
    if not a or not b:
        return LineStats(len(b.splitlines()), len(a.splitlines()), False)
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    pre, suf = _common_ends(la, lb)
    la, lb = la[pre : len(la) - suf], lb[pre : len(lb) - suf]
    if not la or not lb:
        return LineStats(len(lb), len(la), False)
    diffs, complete = _line_diff(la, lb, deadline)
    if not complete:
        adds, dels = _multiset_estimate(la, lb)
        return LineStats(adds, dels, False, approximate=True)
    adds = sum(len(text) for op, text in diffs if op == 1)
    dels = sum(len(text) for op, text in diffs if op == -1)
    return LineStats(adds, dels, False)


def _common_ends(la: list[str], lb: list[str]) -> tuple[int, int]:
    """(common leading lines, common trailing lines after those) of two line lists.

    Found by C-level slice comparison (binary search), leaving only the edited middle for the
    Python-speed diff (a formatter touching 100 files changes a few lines each)."""
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
    return pre, lo


def _line_diff(la: list[str], lb: list[str], deadline: float) -> tuple[list[tuple[int, str]], bool]:
    """A line diff as diff-match-patch runs (one character per distinct line; ``len(text)`` of a
    run is its number of lines), and whether it finished before ``deadline`` (perf_counter).
    A diff cut by the deadline is still a valid edit script, only coarser than needed.

    Large inputs are first cut at anchors (lines occurring once on each side, in the same order:
    the patience-diff idea), so moved or split code costs many small diffs instead of one
    quadratic one."""
    index: dict[str, int] = {}
    chars_a = "".join([chr(index.setdefault(line, len(index))) for line in la])
    chars_b = "".join([chr(index.setdefault(line, len(index))) for line in lb])
    if len(index) >= 0x10FFFF:
        return [(-1, chars_a), (1, chars_b)], False
    remaining = deadline - time.perf_counter()
    if len(la) + len(lb) <= EXACT_BELOW_LINES:
        remaining = max(remaining, FILE_DIFF_TIMEOUT_S)
    if remaining <= 0:
        return [(-1, chars_a), (1, chars_b)], False
    wall_deadline = time.time() + remaining
    dmp = diff_match_patch()
    # The deadline is passed explicitly (dmp's own default is a silent 1 s); a positive
    # Diff_Timeout keeps its half-match speed-up on.
    dmp.Diff_Timeout = remaining
    anchors = _anchors(chars_a, chars_b) if max(len(la), len(lb)) > ANCHOR_MIN_LINES else []
    if not anchors:
        diffs: list[tuple[int, str]] = dmp.diff_main(chars_a, chars_b, False, wall_deadline)
        return diffs, time.time() < wall_deadline
    out: list[tuple[int, str]] = []
    i = j = 0
    for ai, bj in [*anchors, (len(chars_a), len(chars_b))]:
        if time.time() >= wall_deadline:  # out of time: the rest as one coarse (valid) change
            out.extend(run for run in ((-1, chars_a[i:]), (1, chars_b[j:])) if run[1])
            return out, False
        if i < ai or j < bj:
            out.extend(dmp.diff_main(chars_a[i:ai], chars_b[j:bj], False, wall_deadline))
        if ai < len(chars_a):
            out.append((0, chars_a[ai]))
        i, j = ai + 1, bj + 1
    # Runs are not re-merged (dmp's cleanupMerge is quadratic on long lists): consumers only
    # sum run lengths or fold adjacent runs themselves.
    return out, time.time() < wall_deadline


ANCHOR_MIN_LINES = 500
"""Inputs longer than this (lines, after trimming common ends) are cut at anchors first."""


def _anchors(a: str, b: str) -> list[tuple[int, int]]:
    """(position in ``a``, position in ``b``) of characters unique on both sides, the longest
    run of them in the same order (longest increasing subsequence, O(n log n))."""
    count_a, count_b = Counter(a), Counter(b)
    where_b = {c: j for j, c in enumerate(b) if count_b[c] == 1}
    pairs = [(i, where_b[c]) for i, c in enumerate(a) if count_a[c] == 1 and c in where_b]
    tails: list[int] = []  # tails[k]: b-position ending the best run of length k + 1
    tail_index: list[int] = []  # index into ``pairs`` of that tail
    previous = [-1] * len(pairs)
    for n, (_, bj) in enumerate(pairs):
        k = bisect.bisect_left(tails, bj)
        if k == len(tails):
            tails.append(bj)
            tail_index.append(n)
        else:
            tails[k] = bj
            tail_index[k] = n
        previous[n] = tail_index[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    n = tail_index[-1] if tail_index else -1
    while n >= 0:
        run.append(pairs[n])
        n = previous[n]
    return run[::-1]


def _multiset_estimate(la: list[str], lb: list[str]) -> tuple[int, int]:
    """(additions, deletions) counting lines by multiplicity only: linear time, a lower bound of
    any diff, and exact in the net change."""
    ca, cb = Counter(la), Counter(lb)
    return sum((cb - ca).values()), sum((ca - cb).values())


def unified_diff_lines(
    a: list[str], b: list[str], fromfile: str, tofile: str, *, timeout_s: float, context: int = 3
) -> tuple[list[str], bool]:
    """(unified diff lines in difflib's format, approximate): the diff of two line lists within
    ``timeout_s``. Cut by the timeout it is still a correct patch (coarser hunks); the flag says so."""
    if a == b:
        return [], False
    pre, suf = _common_ends(a, b)
    pa, pb = a[pre : len(a) - suf], b[pre : len(b) - suf]
    if pa and pb:
        diffs, complete = _line_diff(pa, pb, time.perf_counter() + timeout_s)
    else:  # a pure insertion or deletion: nothing to search
        diffs, complete = [(op, "x" * n) for op, n in ((-1, len(pa)), (1, len(pb))) if n], True
    opcodes = _opcodes(diffs, pre, len(a), len(b))
    matcher = _FixedOpcodes(opcodes)
    out = [f"--- {fromfile}\n", f"+++ {tofile}\n"]
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        old_range = _range(first[1], last[2])
        new_range = _range(first[3], last[4])
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                out.extend("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                out.extend("+" + line for line in b[j1:j2])
    return out, not complete


def line_opcodes(a: list[str], b: list[str], *, deadline: float) -> tuple[list[Opcode], bool]:
    """(difflib-style opcodes turning ``a`` into ``b``, approximate) within ``deadline``
    (perf_counter): the same bounded line diff as the display diff; cut by the deadline the
    opcodes are still a valid (coarser) edit script and the flag says so."""
    if a == b:
        return ([("equal", 0, len(a), 0, len(b))] if a else []), False
    pre, suf = _common_ends(a, b)
    pa, pb = a[pre : len(a) - suf], b[pre : len(b) - suf]
    if pa and pb:
        diffs, complete = _line_diff(pa, pb, deadline)
    else:
        diffs, complete = [(op, "x" * n) for op, n in ((-1, len(pa)), (1, len(pb))) if n], True
    return _opcodes(diffs, pre, len(a), len(b)), not complete


def _opcodes(diffs: list[tuple[int, str]], pre: int, len_a: int, len_b: int) -> list[Opcode]:
    """difflib-style opcodes for the whole sequences from the diff of their trimmed middles."""
    ops: list[Opcode] = []
    i = j = pre
    if pre:
        ops.append(("equal", 0, pre, 0, pre))
    pending_del = pending_ins = 0

    def flush() -> None:
        nonlocal i, j, pending_del, pending_ins
        if pending_del or pending_ins:
            tag: OpTag = "replace" if pending_del and pending_ins else "delete" if pending_del else "insert"
            ops.append((tag, i, i + pending_del, j, j + pending_ins))
            i += pending_del
            j += pending_ins
            pending_del = pending_ins = 0

    for op, text in diffs:
        n = len(text)
        if op == -1:
            pending_del += n
        elif op == 1:
            pending_ins += n
        else:
            flush()
            if ops and ops[-1][0] == "equal":  # fold adjacent equal runs into one
                _, i1, _, j1, _ = ops.pop()
                ops.append(("equal", i1, i + n, j1, j + n))
            else:
                ops.append(("equal", i, i + n, j, j + n))
            i += n
            j += n
    flush()
    if i < len_a or j < len_b:
        ops.append(("equal", i, len_a, j, len_b))
    return ops


class _FixedOpcodes(difflib.SequenceMatcher[str]):
    """A SequenceMatcher whose opcodes were computed elsewhere: reuses difflib's hunk grouping."""

    def __init__(self, opcodes: list[Opcode]) -> None:
        super().__init__(None, [], [])
        self._fixed = opcodes

    def get_opcodes(self) -> list[Opcode]:
        return list(self._fixed)


def _range(start: int, stop: int) -> str:
    """A unified-diff range, as difflib writes it."""
    beginning = start + 1
    length = stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"
