"""DirIndex: the sorted path index shell-call capture uses to find the files under a directory."""

from __future__ import annotations

import random

from retrace.engine.manifest import Delta, DirIndex, Manifest, make_entry


def test_dir_index_tracks_a_changing_manifest_like_a_full_scan() -> None:
    rng = random.Random(5)
    entry = make_entry("file", "0" * 64, 1)
    head: Manifest = {}

    def name() -> str:
        parts = ["a", "b", "a b", "é", "a.x", "a-", "a0"]
        return "/".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))

    idx = DirIndex(source=lambda: head)  # lazy: built from the head at first use
    for step in range(600):
        delta: Delta = {}
        for _ in range(rng.randint(1, 5)):
            p = name()
            clash = any(q.startswith(p + "/") or p.startswith(q + "/") for q in head)
            if not clash:
                delta[p] = None if p in head and rng.random() < 0.7 else entry
        idx.apply(head, delta)
        for p, e in delta.items():
            if e is None:
                head.pop(p, None)
            else:
                head[p] = entry
        if step % 3 == 0:
            for d in ["a", "b", "a/b", "a b", "é", "a/a/a", "a.x", "a-"]:
                expected = sorted(q for q in head if q.startswith(d + "/"))
                assert sorted(idx.files_under(d)) == expected, (step, d)
                assert idx.has(d) == bool(expected)
    assert not idx.has("")
