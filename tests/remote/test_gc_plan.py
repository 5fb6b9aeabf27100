"""The remote GC's decisions (pure): which packs to condemn, delete or release; which segments
expire or are superseded. Times in seconds; grace = 100, now = 1000 unless a row says else."""

from __future__ import annotations

import pytest

from retrace.sync.gc import PackState, SegmentState, SweepPlan, plan_sessions, plan_sweep
from retrace.sync.keys import SegmentKey

NOW = 1000.0
GRACE = 100.0
OLD = NOW - GRACE - 1  # older than the grace period
YOUNG = NOW - GRACE + 1  # within it


def pack(
    name: str, blobs: set[str] | None, modified: float = OLD, *, size: int = 10, has_pack: bool = True
) -> PackState:
    return PackState(name, None if blobs is None else frozenset(blobs), modified, size, has_pack)


SWEEP_CASES = [
    # (id, packs, marks, live, expected plan)
    ("live pack, no mark: kept", [pack("p", {"a", "b"})], {}, {"a"}, SweepPlan()),
    ("live pack, marked: released", [pack("p", {"a"})], {"p": OLD}, {"a"}, SweepPlan(release=("p",))),
    (
        "dead young pack: waits (its segment may be on its way)",
        [pack("p", {"a"}, YOUNG)],
        {},
        set(),
        SweepPlan(),
    ),
    ("dead old pack: condemned", [pack("p", {"a"})], {}, {"x"}, SweepPlan(condemn=("p",))),
    (
        "dead pack at exactly grace: condemned",
        [pack("p", {"a"}, NOW - GRACE)],
        {},
        set(),
        SweepPlan(condemn=("p",)),
    ),
    ("condemned recently: waits", [pack("p", {"a"})], {"p": YOUNG}, set(), SweepPlan()),
    (
        "condemned >= grace ago and still dead: deleted",
        [pack("p", {"a"}, size=42)],
        {"p": OLD},
        set(),
        SweepPlan(delete=("p",), bytes_freed=42),
    ),
    (
        "condemned long ago but live again: released, never deleted",
        [pack("p", {"a", "z"})],
        {"p": 0.0},
        {"z"},
        SweepPlan(release=("p",)),
    ),
    (
        "uploaded again after its mark (same pack rebuilt by a pusher): released, not deleted",
        [pack("p", {"a"}, OLD)],
        {"p": OLD - 50},
        set(),
        SweepPlan(release=("p",)),
    ),
    ("mark of a pack that is gone: released", [], {"gone": OLD}, set(), SweepPlan(release=("gone",))),
    (
        "pack without index, young: waits (upload in progress)",
        [pack("p", None, YOUNG)],
        {},
        set(),
        SweepPlan(),
    ),
    ("pack without index, old: condemned", [pack("p", None)], {}, {"a"}, SweepPlan(condemn=("p",))),
    (
        "index without pack (half-deleted) naming live blobs: still dead",
        [pack("p", {"a"}, has_pack=False)],
        {"p": OLD},
        {"a"},
        SweepPlan(delete=("p",), bytes_freed=10),
    ),
    ("empty pack, old: condemned", [pack("p", set())], {}, set(), SweepPlan(condemn=("p",))),
    (
        "mixed",
        [
            pack("a1", {"x"}),
            pack("b2", {"y"}),
            pack("c3", {"z"}, size=5),
            pack("d4", {"w"}, YOUNG),
            pack("e5", {"v"}),
        ],
        {"b2": YOUNG, "c3": OLD, "e5": OLD},
        {"x", "v"},
        SweepPlan(delete=("c3",), release=("e5",), bytes_freed=5),
    ),
]


@pytest.mark.parametrize(
    ("packs", "marks", "live", "expected"), [c[1:] for c in SWEEP_CASES], ids=[c[0] for c in SWEEP_CASES]
)
def test_plan_sweep(
    packs: list[PackState], marks: dict[str, float], live: set[str], expected: SweepPlan
) -> None:
    assert plan_sweep(packs, marks, live, now=NOW, grace=GRACE) == expected


def test_sweep_never_deletes_a_live_blob_whatever_the_marks() -> None:
    """Property over a small grid: a pack holding a live blob is never deleted nor condemned."""
    for modified in (0.0, OLD, YOUNG, NOW):
        for mark in (None, 0.0, OLD, YOUNG):
            marks = {} if mark is None else {"p": mark}
            plan = plan_sweep([pack("p", {"a", "b"}, modified)], marks, {"b"}, now=NOW, grace=GRACE)
            assert "p" not in plan.delete and "p" not in plan.condemn


def seg(
    sid: str, store: str, gen: int, seq: int, start: int, end: int, modified: float = OLD, size: int = 1
) -> SegmentState:
    return SegmentState(SegmentKey(sid, store, gen, seq, start, end, 1), modified, size)


RETENTION = 500.0

SESSION_CASES = [
    # (id, segments, kept keys, deleted keys, expired streams)
    ("one live stream: all kept", [seg("s", "A", 0, 0, 0, 5), seg("s", "A", 0, 1, 5, 9)], 2, 0, ()),
    (
        "stream idle past retention: expired entirely",
        [seg("s", "A", 0, 0, 0, 5, NOW - RETENTION - 1), seg("s", "A", 0, 1, 5, 9, NOW - RETENTION)],
        0,
        2,
        (("s", "A"),),
    ),
    (
        "one recent segment keeps the stream",
        [seg("s", "A", 0, 0, 0, 5, 0.0), seg("s", "A", 0, 1, 5, 9, YOUNG)],
        2,
        0,
        (),
    ),
    (
        "newer complete generation past grace: older deleted",
        [seg("s", "A", 0, 0, 0, 5), seg("s", "A", 0, 1, 5, 9), seg("s", "A", 1, 0, 0, 4)],
        1,
        2,
        (),
    ),
    (
        "newer generation still young: older kept",
        [seg("s", "A", 0, 0, 0, 5), seg("s", "A", 1, 0, 0, 4, YOUNG)],
        2,
        0,
        (),
    ),
    (
        "newer generation with a gap (upload under way): nothing superseded",
        [seg("s", "A", 0, 0, 0, 5), seg("s", "A", 1, 1, 4, 8)],
        2,
        0,
        (),
    ),
    (
        "other stores' copies of a session are independent",
        [seg("s", "A", 0, 0, 0, 5, 0.0), seg("s", "B", 0, 0, 0, 7)],
        1,
        1,
        (("s", "A"),),
    ),
    (
        "three generations: both older ones go",
        [
            seg("s", "A", 0, 0, 0, 5),
            seg("s", "A", 1, 0, 0, 3),
            seg("s", "A", 2, 0, 0, 2),
            seg("s", "A", 2, 1, 2, 6, YOUNG),
        ],
        2,
        2,
        (),
    ),
]


@pytest.mark.parametrize(
    ("segments", "kept", "deleted", "expired"),
    [c[1:] for c in SESSION_CASES],
    ids=[c[0] for c in SESSION_CASES],
)
def test_plan_sessions(
    segments: list[SegmentState], kept: int, deleted: int, expired: tuple[tuple[str, str], ...]
) -> None:
    plan = plan_sessions(segments, now=NOW, grace=GRACE, retention=RETENTION)
    assert (len(plan.keep), len(plan.delete), plan.expired) == (kept, deleted, expired)
    assert set(plan.keep) | set(plan.delete) == set(segments)
    assert not set(plan.keep) & set(plan.delete)


def test_superseded_keeps_the_best_generation() -> None:
    segments = [seg("s", "A", 0, 0, 0, 5), seg("s", "A", 1, 0, 0, 4)]
    plan = plan_sessions(segments, now=NOW, grace=GRACE, retention=RETENTION)
    assert [s.key.gen for s in plan.keep] == [1]
    assert [s.key.gen for s in plan.delete] == [0]
