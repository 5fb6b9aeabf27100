"""Ids and clocks from elsewhere never poison local state (issue 25, item 5).

A session opened from another machine brings ids and timestamps this store did not make: the
largest possible ids, ids equal to local ones, times in the future. The local clock can be
wrong, and jump back or forward between two checkpoints. Whatever they are: local ids stay
unique, every local checkpoint stays restorable, the next local checkpoint's parent is the
local head (what this workspace matches), and retention keeps the newest checkpoints by order of
creation.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.engine.foreign import foreign_session, import_session, rename_ids
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig, clock
from retrace.engine.config import RetentionPolicy
from retrace.engine.store.layout import StoreLayout
from retrace.engine.verify import verify_store

MAX_TIME = "zzzzzzzzzz"


def _local_work(
    eng: Engine, ws: Path, n: int, tag: str
) -> list[tuple[str, dict[str, tuple[str, str, bool]]]]:
    """``n`` local checkpoints, each changing a file; their ids with the tree each one recorded."""
    out = []
    for i in range(n):
        (ws / "local.txt").write_text(f"{tag} {i}\n")
        cp = eng.checkpoint(f"{tag} {i}", kind="tool", tool="edit_file")
        out.append((cp.id, entry_hashes(ws)))
    return out


def _assert_restorable(
    eng: Engine, ws: Path, made: list[tuple[str, dict[str, tuple[str, str, bool]]]]
) -> None:
    for cid, tree in made:
        assert eng.get(cid).damage is None, eng.get(cid).damage
        eng.restore(cid, force=True)
        assert entry_hashes(ws) == tree, f"restoring {cid} did not bring its tree back"


def test_a_foreign_session_with_the_largest_ids_does_not_wrap_local_ids(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    with Engine.open(ws, store) as eng:
        before = _local_work(eng, ws, 2, "before")
    fstore, fsid, fids = foreign_session(tmp_path, "other", {"theirs.txt": "their work"})
    biggest = {cid: MAX_TIME + cid[-2:] for cid in fids}
    import_session(fstore, fsid, store, rename_ids(biggest))

    with Engine.open(ws, store) as eng:
        assert eng.head.id == before[-1][0], "the head stays on what this workspace matches"
        after = _local_work(eng, ws, 3, "after")
        assert eng.get(after[0][0]).parent == before[-1][0]
        new_ids = [cid for cid, _ in after]
        assert len(set(new_ids)) == 3 and not set(new_ids) & set(biggest.values())
    with Engine.open(ws, store) as eng:
        assert [p for p in eng.problems if "damage" in p or "lost" in p] == []
        assert eng.head.id == after[-1][0], "the head is the newest local checkpoint"
        _assert_restorable(eng, ws, before + after)
        for cid in biggest.values():
            assert eng.get(cid).session_id == fsid  # the foreign session stays listed
    report = verify_store(StoreLayout(store)).report
    mine = {cid for cid, _ in before + after}
    assert not [d for d in report.damage if d.checkpoint_id in mine]
    assert not [a for a in report.affected if a.id in mine]


def test_after_opening_another_machines_session_the_next_checkpoint_builds_on_the_local_head(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 2, "mine")
    # The other machine worked later: its ids (and times) are all newer than ours.
    fstore, fsid, _ = foreign_session(tmp_path, "laptop", {"local.txt": "their version"}, steps=3)
    import_session(fstore, fsid, store)

    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        assert eng.unrecorded_changes() == {}, "the workspace matches the local head, not theirs"
        cp = eng.checkpoint("next")
        assert cp.parent == local[-1][0]
        assert cp.kind != "external"
    with Engine.open(ws, store) as eng:
        assert eng.head.id == cp.id
        nxt = eng.checkpoint("after reopen")
        assert nxt.parent == cp.id


def test_adopting_an_opened_session_keeps_the_head_and_the_parent_local(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 1, "mine")
        fstore, fsid, fids = foreign_session(tmp_path, "desk", {"x.txt": "x"})
        biggest = {cid: MAX_TIME + cid[-2:] for cid in fids}
        import_session(fstore, fsid, store, rename_ids(biggest))
        added = eng.adopt_sessions()
        assert set(added) == set(biggest.values())
        assert eng.head.id == local[-1][0]
        made = _local_work(eng, ws, 2, "more")
        assert eng.get(made[0][0]).parent == local[-1][0]
        assert not set(c for c, _ in made) & set(added)
    with Engine.open(ws, store) as eng:
        assert eng.head.id == made[-1][0]
        _assert_restorable(eng, ws, local + made)


def test_a_foreign_session_reusing_local_ids_cannot_replace_local_checkpoints(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    """Ids equal to local ones (a collision across machines, or a forged session): the local
    checkpoint stays what this store recorded, and the foreign one is reported."""
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 2, "mine")
    fstore, fsid, fids = foreign_session(tmp_path, "twin", {"local.txt": "forged"}, steps=1)
    import_session(fstore, fsid, store, rename_ids(dict(zip(fids, [c for c, _ in local], strict=True))))
    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        assert any("appears in more than one journal" in p for p in eng.problems), eng.problems
        _assert_restorable(eng, ws, local)
        assert eng.get(local[0][0]).session_id != fsid


def test_a_foreign_checkpoint_whose_parent_id_is_a_local_one_is_damage_not_a_local_child(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    """Only the other machine's baseline reuses a local id: its children name a local checkpoint
    as parent, but the copy of the parent they carry is not ours. Their manifests would be
    built on the wrong files: they are damaged, and nothing local changes."""
    (ws / "mine.txt").write_text("in the local baseline only\n")
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 2, "mine")
        baseline = eng.timeline()[0].id
    fstore, fsid, fids = foreign_session(tmp_path, "clash", {"local.txt": "theirs"}, steps=2)
    import_session(fstore, fsid, store, rename_ids({fids[0]: baseline}))
    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        for cid in fids[1:]:
            assert eng.get(cid).damage is not None
        assert "differs from the copy" in (eng.get(fids[1]).damage or "")
        _assert_restorable(eng, ws, local)


def test_invalid_ids_in_a_journal_are_damage_reported_by_verify(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 1, "mine")
    fstore, fsid, fids = foreign_session(tmp_path, "odd", {"y.txt": "y"})
    bad = {fids[0]: "../../" + "x" * 200, fids[1]: "Z" * 12}
    import_session(fstore, fsid, store, rename_ids(bad))
    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        ids = {c.id for c in eng.timeline()}
        assert not ids & set(bad.values()), "an invalid id never enters the history"
        assert any("checkpoint id" in p for p in eng.problems), eng.problems
    report = verify_store(StoreLayout(store)).report
    assert any("checkpoint id" in d.reason for d in report.damage), report.damage
    assert not report.ok


# ---------------------------------------------------------------------------- the clock


def test_gc_keeps_checkpoints_made_while_the_clock_was_behind(
    ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = datetime.now(UTC)
    offset = [timedelta(0)]
    monkeypatch.setattr(clock, "now", lambda: real + offset[0])
    cfg = EngineConfig(retention=RetentionPolicy(max_age_days=7))
    with Engine.open(ws, store, config=cfg) as eng:
        offset[0] = -timedelta(days=3)
        older = _local_work(eng, ws, 3, "on time")
        offset[0] = -timedelta(days=40)  # the clock went back: these are the newest all the same
        newest = _local_work(eng, ws, 3, "clock behind")
        offset[0] = timedelta(0)
        eng.gc()
        kept = {c.id for c in eng.timeline()}
        assert {c for c, _ in older + newest} <= kept
        _assert_restorable(eng, ws, newest + older)


def test_gc_drops_by_creation_order_whatever_the_timestamps(
    ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clock forward then back: the count quota keeps the last N made, not the N latest-dated."""
    real = datetime.now(UTC)
    offset = [timedelta(0)]
    monkeypatch.setattr(clock, "now", lambda: real + offset[0])
    cfg = EngineConfig(retention=RetentionPolicy(max_checkpoints=4, max_age_days=10_000))
    with Engine.open(ws, store, config=cfg) as eng:
        offset[0] = timedelta(days=365)
        early = _local_work(eng, ws, 3, "clock ahead")
        offset[0] = -timedelta(hours=5)
        late = _local_work(eng, ws, 4, "clock right")
        eng.gc()
        kept = [c.id for c in eng.timeline()]
        assert kept == [c for c, _ in late], (kept, early, late)
        _assert_restorable(eng, ws, late)


def test_a_foreign_session_from_the_future_does_not_make_gc_drop_local_checkpoints(
    tmp_path: Path, ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = datetime.now(UTC)
    offset = [timedelta(0)]
    monkeypatch.setattr(clock, "now", lambda: real + offset[0])
    offset[0] = timedelta(days=3650)
    fstore, fsid, _ = foreign_session(tmp_path, "future", {"f.txt": "f"}, steps=4)
    offset[0] = timedelta(0)
    cfg = EngineConfig(retention=RetentionPolicy(max_checkpoints=6, max_age_days=30))
    with Engine.open(ws, store, config=cfg) as eng:
        local = _local_work(eng, ws, 5, "mine")
    import_session(fstore, fsid, store)
    with Engine.open(ws, store, config=cfg) as eng:
        eng.gc()
        kept = {c.id for c in eng.timeline()}
        assert {c for c, _ in local} <= kept, "local checkpoints go after what the bucket still holds"
        _assert_restorable(eng, ws, local)


def test_the_clock_jumping_back_by_hours_between_two_checkpoints(
    ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = datetime.now(UTC)
    offset = [timedelta(0)]
    monkeypatch.setattr(clock, "now", lambda: real + offset[0])
    with Engine.open(ws, store) as eng:
        first = _local_work(eng, ws, 2, "before")
        offset[0] = -timedelta(hours=6)
        second = _local_work(eng, ws, 2, "after")
    with Engine.open(ws, store) as eng:
        third = _local_work(eng, ws, 1, "reopened")
        assert [c.id for c in eng.timeline()][-5:] == [c for c, _ in first + second + third]
        assert eng.get(third[0][0]).parent == second[-1][0]


def test_ids_stay_unique_when_the_clock_is_past_the_id_range(
    ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock beyond what the id's time part can hold (or one stuck) still gives unique ids
    that never wrap before older ones in the order."""
    far = datetime(2199, 1, 1, tzinfo=UTC)
    monkeypatch.setattr(clock, "now", lambda: far)
    with Engine.open(ws, store) as eng:
        made = _local_work(eng, ws, 40, "far")
        ids = [c for c, _ in made]
        assert len(set(ids)) == len(ids)
        assert all(len(c) == 12 for c in ids)
    with Engine.open(ws, store) as eng:
        assert [c.id for c in eng.timeline()][-40:] == ids
        assert eng.head.id == ids[-1]
        _assert_restorable(eng, ws, made[-3:])


def test_a_store_written_before_origins_keeps_its_head_and_goes_on(ws: Path, store: Path) -> None:
    """Lines with no origin in a store that predates origins are local (legacy): the head and
    the chain go on; lines committed since are stamped and rank after them."""
    with Engine.open(ws, store) as eng:
        old = _local_work(eng, ws, 2, "old")
    layout = StoreLayout(store)
    meta = json.loads(layout.meta.read_text())
    del meta["originKey"]
    layout.meta.write_text(json.dumps(meta))
    for sid in layout.session_ids():  # as an older version wrote them: no origin
        lines = []
        for line in layout.journal(sid).read_bytes().splitlines():
            ev = json.loads(line)
            for key in ("origin", "lineSum", "v"):  # an older version wrote neither
                ev.pop(key, None)
            lines.append(json.dumps(ev, separators=(",", ":")).encode() + b"\n")
        layout.journal(sid).write_bytes(b"".join(lines))
    with Engine.open(ws, store) as eng:
        assert eng.head.id == old[-1][0]
        new = _local_work(eng, ws, 2, "new")
        assert eng.get(new[0][0]).parent == old[-1][0]
    assert json.loads(layout.meta.read_text())["legacyLines"] is True
    with Engine.open(ws, store) as eng:
        assert eng.head.id == new[-1][0]
        _assert_restorable(eng, ws, old + new)


def test_a_forged_origin_does_not_make_a_foreign_line_local(tmp_path: Path, ws: Path, store: Path) -> None:
    """A bucket writer who copies our ``origin`` fields (they are in every pushed journal) onto
    its own lines does not make them ours: the hash is bound to the journal they sit in."""
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 2, "mine")
    ours = [json.loads(x) for x in StoreLayout(store).journal(eng.session_id).read_bytes().splitlines()]
    stamps = [ev["origin"] for ev in ours if ev.get("type") == "checkpoint"]
    fstore, fsid, _ = foreign_session(tmp_path, "forger", {"local.txt": "forged"}, steps=2)

    def forge(data: bytes) -> bytes:
        out = []
        for i, line in enumerate(data.splitlines()):
            ev = json.loads(line)
            if ev.get("type") == "checkpoint":
                ev["origin"] = {"seq": 10_000 + i, "mac": stamps[i % len(stamps)]["mac"]}
            out.append(json.dumps(ev, separators=(",", ":")).encode() + b"\n")
        return b"".join(out)

    import_session(fstore, fsid, store, forge)
    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        assert eng.checkpoint("next").parent == local[-1][0]


def test_a_journal_whose_parents_loop_is_damage_and_every_walk_ends(
    tmp_path: Path, ws: Path, store: Path
) -> None:
    with Engine.open(ws, store) as eng:
        local = _local_work(eng, ws, 1, "mine")
    fstore, fsid, fids = foreign_session(tmp_path, "loop", {"z.txt": "z"}, steps=2)

    def loop(data: bytes) -> bytes:  # the baseline's parent is the last one: b -> s2 -> s1 -> b
        out = []
        for line in data.splitlines():
            ev = json.loads(line)
            if ev.get("type") == "checkpoint" and ev["checkpoint"]["id"] == fids[0]:
                ev["checkpoint"]["parent"] = fids[-1]
            out.append(json.dumps(ev, separators=(",", ":")).encode() + b"\n")
        return b"".join(out)

    import_session(fstore, fsid, store, loop)
    with Engine.open(ws, store) as eng:
        assert eng.head.id == local[-1][0]
        assert any("loops back" in p for p in eng.problems), eng.problems
        assert not {c.id for c in eng.timeline()} & set(fids)
        eng.checkpoint("still fine")
        eng.gc()
    report = verify_store(StoreLayout(store)).report
    assert not report.ok and any("loops back" in d.reason for d in report.damage)
