"""The history index is a cache: whatever happened to it or to the journals since it was written,
replay with it gives exactly what a full replay of the journals gives (checkpoints, deltas,
snapshots, damage, head, provenance, every reported problem and line count). And it is used:
an unchanged journal is not scanned again, a grown one only from where it was scanned."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from retrace.engine import Engine, EngineConfig
from retrace.engine.config import RetentionPolicy
from retrace.engine.history import History, replay
from retrace.engine.history.head import settle_head
from retrace.engine.history.index import HistoryIndex
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import RestoreDoneEvent, RestoreIntentEvent, ToolCallIntentEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout


def _build(ws: Path, store: Path, sessions: int = 4, calls: int = 6) -> None:
    """A store with several sessions: checkpoints between agent events, a restore intent/outcome."""
    (ws / "src").mkdir(parents=True, exist_ok=True)
    for i in range(5):
        (ws / "src" / f"m{i}.py").write_text(f"x = {i}\n")
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        for s in range(sessions):
            sid = eng.new_session(f"ses_{s}")
            eng.append_event(TurnEvent(turn_id=f"t{s}", text=f"task {s}"))
            for c in range(calls):
                rel = f"src/m{(s + c) % 5}.py"
                eng.append_event(ToolCallIntentEvent(id=f"c{s}.{c}", tool="edit_file", input={"path": rel}))
                (ws / rel).write_text(f"x = {s}.{c}\n" * (c + 1))
                eng.checkpoint(f"edit {rel}", [rel], kind="tool", session_id=sid, tool_call_id=f"c{s}.{c}")
            if s == 1:
                eng.append_event(
                    RestoreIntentEvent(restore_id=f"r{s}", pre_head=eng.head.id, target_id="x", paths=[])
                )
                eng.append_event(RestoreDoneEvent(restore_id=f"r{s}", outcome="applied"))


def _replayed(store: Path, index: HistoryIndex | None) -> dict[str, Any]:
    """Everything replay + head selection produce, in comparable form."""
    layout = StoreLayout(store)
    blobs = BlobStore(layout.blobs)
    present = set(blobs.ids())
    history = History(blobs)
    report = replay(layout, history, present, index)
    problems = settle_head(history, present)
    return {
        "order": list(history.order),
        "cps": {cid: cp.model_dump(mode="json") for cid, cp in history.cps.items()},
        "deltas": {cid: repr(d) for cid, d in history.deltas.items()},
        "snapshots": dict(history.snapshots),
        "depth": dict(history.snap_depth),
        "damage": dict(history.damage),
        "head": (history.head_id, repr(sorted(history.head.items())), dict(history.prov)),
        "problems": [*report.problems, *problems],
        "lost": dict(report.lost),
        "rebuilt": dict(report.rebuilt),
        "known_lost": dict(report.known_lost),
        "lines": report.lines,
        "bad": [
            (b.path, b.number, b.reason, b.checkpoint_id, b.malformed_checkpoint) for b in report.bad_lines
        ],
        "restore_events": report.restore_events,
    }


def _indexed(store: Path) -> tuple[dict[str, Any], HistoryIndex]:
    index = HistoryIndex.load(StoreLayout(store).history_index)
    result = _replayed(store, index)
    index.save()
    return result, index


def _age(store: Path) -> None:
    """Make every journal look written long ago (the index trusts an untouched old journal
    without hashing it; a fresh one is verified by digest)."""
    for sid in StoreLayout(store).session_ids():
        os.utime(StoreLayout(store).journal(sid), ns=(1_000_000_000, 1_000_000_000))


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _build(ws, store)
    return ws, store


def test_unchanged_journals_are_not_scanned_again(built: tuple[Path, Path]) -> None:
    _, store = built
    _age(store)
    full = _replayed(store, None)
    first, index = _indexed(store)
    assert first == full
    assert index.trusted == 0
    assert StoreLayout(store).history_index.exists()
    again, index = _indexed(store)
    assert again == full
    assert index.trusted == len(StoreLayout(store).session_ids())
    assert not index.changed  # nothing to write


def test_a_grown_journal_is_scanned_from_where_the_index_stopped(built: tuple[Path, Path]) -> None:
    ws, store = built
    _indexed(store)
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:  # the index is written on open
        (ws / "src" / "m1.py").write_text("grown\n")
        eng.checkpoint("more", ["src/m1.py"], kind="tool", session_id="ses_2")
    with StoreLayout(store).journal("ses_2").open("ab") as f:
        f.write(b'{"type":"turn","turnId":"late","text":"later"}\n')
    index = HistoryIndex.load(StoreLayout(store).history_index)
    recorded = index.marks["ses_2"].size
    assert recorded < StoreLayout(store).journal("ses_2").stat().st_size
    assert _replayed(store, index) == _replayed(store, None)
    assert index.trusted == len(StoreLayout(store).session_ids())  # ses_2 too: its prefix was kept
    assert index.marks["ses_2"].size == StoreLayout(store).journal("ses_2").stat().st_size


def _corrupt_index(store: Path, rng: random.Random, how: int) -> None:
    path = StoreLayout(store).history_index
    data = bytearray(path.read_bytes())
    if how == 0:
        path.write_bytes(bytes(data[: rng.randrange(len(data))]))
    elif how == 1:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
    elif how == 2:  # well-formed JSON, but edited: shifted offsets and counts
        raw = json.loads(data)
        for row in raw["journals"].values():  # [cursor mark, count, spans, sealed from]
            row[0][2] += rng.randint(-3, 3)  # the mark's offset
            row[1] += 1
            row[2] = [[o + rng.randint(-2, 2), n, m] for o, n, m in row[2]]
        path.write_text(json.dumps(raw))
    elif how == 3:
        path.write_text(json.dumps({"version": 99, "journals": {}}))


def _damage_journals(store: Path, rng: random.Random, how: int) -> None:
    layout = StoreLayout(store)
    sid = rng.choice(layout.session_ids())
    path = layout.journal(sid)
    data = bytearray(path.read_bytes())
    if how == 0:  # truncated (a torn tail, or whole lines gone)
        path.write_bytes(bytes(data[: rng.randrange(len(data))]))
    elif how == 1:  # bytes damaged in place
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data) - 1)] = 0  # a NUL byte: no JSON line survives it
        path.write_bytes(bytes(data))
    elif how == 2:  # replaced by a rewrite without some lines (what gc and repair do)
        lines = data.split(b"\n")
        kept = [ln for ln in lines if rng.random() > 0.2]
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"\n".join(kept))
        tmp.replace(path)
    elif how == 3:  # grew, with a damaged line and a torn tail
        with path.open("ab") as f:
            f.write(b'{"type":"checkpointLost","id":"zzzz","reason":"test"}\nnot json\n{"type":"tu')
    elif how == 4:  # removed
        shutil.rmtree(path.parent)
    elif how == 5:  # an agent event line (one replay skips) damaged in place
        path = layout.journal(rng.choice([s for s in layout.session_ids() if s.startswith("ses_")]))
        data = bytearray(path.read_bytes())
        at = data.index(b'"type":"toolCallIntent"')
        data[at + rng.randrange(1, 20)] = 0
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("seed", range(35))
def test_index_or_journal_damage_gives_the_full_replay(tmp_path: Path, seed: int) -> None:
    """Every kind of journal damage (7th: none) × every kind of index damage (5th: none)."""
    rng = random.Random(seed)
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _build(ws, store, sessions=3, calls=4)
    if rng.random() < 0.5:
        _age(store)
    _indexed(store)
    _damage_journals(store, rng, seed % 7)
    _corrupt_index(store, rng, seed // 7)
    full = _replayed(store, None)
    assert _indexed(store)[0] == full
    assert _indexed(store)[0] == full  # and the index it rewrote is right too


def test_gc_rewrites_journals_and_the_next_open_sees_it(built: tuple[Path, Path]) -> None:
    ws, store = built
    config = EngineConfig(watcher=False, retention=RetentionPolicy(max_checkpoints=5))
    with Engine.open(ws, store, config=config) as eng:
        eng.gc()
    full = _replayed(store, None)
    assert len(full["order"]) <= 6
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        assert [cp.id for cp in eng.timeline()] == full["order"]
    assert _indexed(store)[0] == _replayed(store, None)


def test_an_interrupted_restore_is_still_found_through_the_index(built: tuple[Path, Path]) -> None:
    ws, store = built
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        pre = eng.head.id
        target = eng.timeline()[0].id
        eng.append_event(
            RestoreIntentEvent(restore_id="crashed", pre_head=pre, target_id=target, paths=["src/m0.py"])
        )
    (ws / "src" / "m0.py").write_text("half-restored\n")
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        assert eng.recovered and "rolled back" in eng.recovered[0]
        assert eng.file_content(pre, "src/m0.py") == (ws / "src" / "m0.py").read_bytes()
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        assert eng.recovered == []


def _odd_checkpoint_lines(line: dict[str, Any]) -> list[dict[str, Any]]:
    """Variants of a good checkpoint line: some still good, most malformed in one way each."""
    cp = line["checkpoint"]
    return [
        {**line, "checkpoint": {**cp, "damage": "stored by mistake"}},  # good: damage is dropped
        {**line, "checkpoint": {**cp, "surprise": 1}},  # an unknown field
        {**line, "checkpoint": {**cp, "createdAt": "not a time"}},
        {**line, "checkpoint": {k: v for k, v in cp.items() if k != "parent"}},
        {**line, "delta": ["not", "an", "object"]},
        {**line, "delta": {"a.py": {"hash": "no kind"}}},
        {**line, "delta": None, "snapshot": None},
        {**line, "snapshot": "NOT-A-BLOB-ID"},
        {**line, "parentDelta": "not a copy"},  # good: only the redundancy is lost
        {**line, "extra": {"kept": "out"}},  # good: unknown top-level keys are ignored
    ]


def test_checkpoint_lines_the_index_vouches_for_parse_as_in_a_full_replay(built: tuple[Path, Path]) -> None:
    """Lines in a trusted prefix are handed to replay unparsed (a checkpoint line is parsed in one
    pass); good, odd and malformed ones end the same as in a full replay."""
    _, store = built
    path = StoreLayout(store).journal("ses_3")
    lines = path.read_bytes().splitlines()
    at = max(i for i, raw in enumerate(lines) if b'"type":"checkpoint"' in raw)
    odd = _odd_checkpoint_lines(json.loads(lines[at]))
    # Each variant takes the place of the newest checkpoint line of a copy of the store.
    for n, variant in enumerate(odd):
        copy = store.parent / f"store{n}"
        shutil.copytree(store, copy)
        copied = StoreLayout(copy).journal("ses_3")
        edited = [*lines[:at], json.dumps(variant).encode(), *lines[at + 1 :], b"{not json", b""]
        copied.write_bytes(b"\n".join(edited))
        _age(copy)
        full = _replayed(copy, None)
        first, index = _indexed(copy)
        assert first == full
        again, index = _indexed(copy)
        assert index.trusted == len(StoreLayout(copy).session_ids())
        assert again == full, variant
