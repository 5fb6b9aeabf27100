"""Property tests: random clock offsets per checkpoint and random foreign id sets.

Whatever the clock reads at each checkpoint (hours or decades off, past the id range, jumping
back and forth) and whatever ids a session opened from elsewhere carries (the largest, the
smallest, random, equal to local ones, out of order), after a reopen:

* local ids are unique and never equal a foreign one;
* every local checkpoint is undamaged and restores the tree it recorded;
* each local checkpoint's parent is the previous local head, and the head is the last one made;
* retention with a count quota keeps exactly the newest local checkpoints by creation order
  (a suffix of what was made), whatever their timestamps.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.foreign import foreign_session, import_session, rename_ids
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig, clock
from retrace.engine.config import RetentionPolicy
from retrace.engine.ids import ALPHABET

# Offsets in hours: small skews, days, years, and past the end of the id range (2059).
OFFSETS = st.one_of(
    st.integers(-6, 6),
    st.integers(-24 * 400, 24 * 400),
    st.sampled_from([-24 * 365 * 30, 24 * 365 * 40, 24 * 365 * 200]),
)
ID_KINDS = st.one_of(
    st.just("max"),
    st.just("min"),
    st.tuples(st.just("local"), st.integers(0, 50)),
    st.text(ALPHABET, min_size=12, max_size=12),
)


@contextmanager
def _skewed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[timedelta]]:
    real = datetime.now(UTC)
    offset = [timedelta(0)]
    monkeypatch.setattr(clock, "now", lambda: real + offset[0])
    yield offset


def _foreign_ids(kinds: list[object], local: list[str], count: int) -> list[str]:
    out: list[str] = []
    for i in range(count):
        kind = kinds[i % len(kinds)] if kinds else "max"
        if kind == "max":
            new = "zzzzzzzzzz" + ALPHABET[i // 32] + ALPHABET[i % 32]
        elif kind == "min":
            new = "0000000000" + ALPHABET[i // 32] + ALPHABET[i % 32]
        elif isinstance(kind, tuple):
            new = local[kind[1] % len(local)]
        else:
            new = str(kind)
        if new in out:  # one journal holds each id once; collisions are with local ones
            new = "zzzzzzzzzy" + ALPHABET[i // 32] + ALPHABET[i % 32]
        out.append(new)
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.lists(OFFSETS, min_size=1, max_size=4),
    after=st.lists(OFFSETS, min_size=1, max_size=4),
    kinds=st.lists(ID_KINDS, min_size=1, max_size=4),
    shuffle=st.randoms(use_true_random=False),
    keep=st.integers(1, 6),
)
def test_local_history_survives_any_clock_and_any_foreign_ids(
    monkeypatch: pytest.MonkeyPatch,
    before: list[int],
    after: list[int],
    kinds: list[object],
    shuffle: object,
    keep: int,
) -> None:
    with tempfile.TemporaryDirectory() as tmp, _skewed(monkeypatch) as offset:
        root = Path(tmp)
        ws, store = root / "ws", root / "store"
        ws.mkdir()
        made: list[tuple[str, dict[str, tuple[str, str, bool]]]] = []

        def work(eng: Engine, hours: list[int], tag: str) -> None:
            for i, h in enumerate(hours):
                offset[0] = timedelta(hours=h)
                (ws / "f.txt").write_text(f"{tag} {i} {h}\n")
                made.append(
                    (eng.checkpoint(f"{tag} {i}", kind="tool", tool="edit_file").id, entry_hashes(ws))
                )

        with Engine.open(ws, store) as eng:
            baseline = eng.head.id
            work(eng, before, "before")
        fstore, fsid, fids = foreign_session(root, "other", {"f.txt": "theirs", "g.txt": "g"}, steps=3)
        local_ids = [baseline] + [c for c, _ in made]
        targets = _foreign_ids(kinds, local_ids, len(fids))
        order = list(zip(fids, targets, strict=True))
        shuffle.shuffle(order)  # type: ignore[attr-defined]
        import_session(fstore, fsid, store, rename_ids(dict(order)))
        with Engine.open(ws, store) as eng:
            assert eng.head.id == made[-1][0]
            work(eng, after, "after")
        offset[0] = timedelta(0)
        with Engine.open(ws, store) as eng:
            ids = [c for c, _ in made]
            assert len(set(ids)) == len(ids)
            assert not set(ids) & (set(targets) - set(local_ids))
            assert eng.head.id == ids[-1]
            chain = [baseline, *ids]
            for prev, cid in itertools.pairwise(chain):
                assert eng.get(cid).parent == prev
                assert eng.get(cid).damage is None
            for cid, tree in made:
                eng.restore(cid, force=True)
                assert entry_hashes(ws) == tree
        cfg = EngineConfig(retention=RetentionPolicy(max_checkpoints=keep, max_age_days=1e9))
        with Engine.open(ws, store, config=cfg) as eng:
            # Local checkpoints in creation order: the chain made above, then the restores.
            local_now = [c.id for c in eng.timeline() if c.session_id != fsid]
            assert local_now[: len(chain)] == chain
            total = len(eng.timeline())
            eng.gc()
            kept = [c.id for c in eng.timeline()]
            assert eng.head.id in kept
            assert len(kept) == min(keep, total)
            kept_local = [c for c in local_now if c in kept]
            assert kept_local == local_now[len(local_now) - len(kept_local) :], "a suffix of creation order"
            assert len(kept_local) == min(keep, len(local_now)), "other machines' checkpoints go first"
