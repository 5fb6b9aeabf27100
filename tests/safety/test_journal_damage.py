"""One bad journal line keeps the rest of the timeline readable and restorable.

Property: any damage (garbage, truncated JSON, wrong schema, NUL bytes) to any set of journal
lines → ``log`` still lists every checkpoint whose data is intact, each of them restores to
exactly the files it recorded, a checkpoint whose own line is damaged is rebuilt from the copy
its child's line carries (and restores exactly too), the checkpoints that still depend on lost
data (two adjacent damaged lines) are marked with a reason (and only those), and no file of the
workspace is ever lost.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cli.cli_support import Cli
from tests.oracles import file_bytes

import retrace.engine.manifest as manifest_mod
from retrace.engine import Engine, EngineConfig
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import TurnEvent

pytestmark = pytest.mark.slow

CONFIG = EngineConfig(watcher=False)
DAMAGE = ("garbage", "truncate", "schema", "nul", "schema-keep-id")


@dataclass
class Template:
    root: Path
    expected: dict[str, dict[str, bytes]]
    """checkpoint id → the workspace files it recorded."""
    parents: dict[str, str | None]
    snapshots: set[str]
    final: dict[str, bytes]


def _build(root: Path) -> Template:
    ws, store = root / "ws", root / "store"
    ws.mkdir()
    rng = random.Random(7)
    for i in range(6):
        (ws / f"f{i}.txt").write_text(f"file {i} v0\n")
    expected: dict[str, dict[str, bytes]] = {}
    saved = manifest_mod.SNAPSHOT_EVERY
    manifest_mod.SNAPSHOT_EVERY = 8  # several snapshots in a short history: damage can stay local
    try:
        with Engine.open(ws, store, config=CONFIG, session_id="s1") as eng:
            expected[eng.head.id] = file_bytes(ws)
            for step in range(14):
                for i in rng.sample(range(8), 2):
                    p = ws / f"f{i}.txt"
                    if i >= 6 and p.exists() and rng.random() < 0.4:
                        p.unlink()
                    else:
                        p.write_text(f"file {i} step {step}\n")
                if step == 7:
                    eng.append_event(TurnEvent(turn_id="t1", text="hello"))
                session = "s2" if step % 3 == 0 else "s1"
                cp = eng.checkpoint(label=f"step {step}", session_id=session)
                expected[cp.id] = file_bytes(ws)
            parents = {c.id: c.parent for c in eng.timeline()}
    finally:
        manifest_mod.SNAPSHOT_EVERY = saved
    snapshots = set()
    for journal in (store / "sessions").glob("*/journal.jsonl"):
        for line in journal.read_text().splitlines():
            ev = json.loads(line)
            if ev["type"] == "checkpoint" and ev.get("snapshot"):
                snapshots.add(ev["checkpoint"]["id"])
    return Template(root, expected, parents, snapshots, file_bytes(ws))


@pytest.fixture(scope="module")
def template() -> Iterator[Template]:
    with tempfile.TemporaryDirectory() as d:
        yield _build(Path(d))


def _damage_line(line: bytes, how: str) -> bytes:
    if how == "garbage":
        return b"\x8f#!garbage{{"
    if how == "truncate":
        return line[: max(1, len(line) // 2)]
    if how == "nul":
        return b"\0" * len(line)
    ev = json.loads(line)
    if how == "schema":
        return b'{"type": 42, "checkpoint": []}'
    cp = ev.get("checkpoint")
    bad = {"type": "checkpoint", "checkpoint": {"id": cp["id"] if isinstance(cp, dict) else "x", "kind": 5}}
    return json.dumps(bad).encode()


def _apply_damage(store: Path, picks: list[tuple[int, str]]) -> set[str]:
    """Damage the chosen lines (index over all journal lines); returns ids of damaged checkpoints."""
    journals = sorted((store / "sessions").glob("*/journal.jsonl"))
    all_lines = [(j, i) for j in journals for i in range(len(j.read_bytes().splitlines()))]
    chosen = {all_lines[k % len(all_lines)]: how for k, how in picks}
    hit: set[str] = set()
    for j in journals:
        lines = j.read_bytes().splitlines()
        for i, line in enumerate(lines):
            how = chosen.get((j, i))
            if how is None:
                continue
            ev = json.loads(line)
            if ev["type"] == "checkpoint":
                hit.add(ev["checkpoint"]["id"])
            lines[i] = _damage_line(line, how)
        j.write_bytes(b"".join(line + b"\n" for line in lines))
    return hit


def _rebuilt(t: Template, hit: set[str]) -> set[str]:
    """Damaged checkpoints whose child's line (intact) carries a copy of their manifest data."""
    return {p for c, p in t.parents.items() if c not in hit and p is not None and p in hit}


def _should_be_damaged(t: Template, hit: set[str]) -> set[str]:
    rebuilt = _rebuilt(t, hit)
    out: set[str] = set()
    for cid in t.expected:  # ids sort by time: parents first
        if cid in hit and cid not in rebuilt:
            continue
        parent = t.parents[cid]
        lost = parent in hit and parent not in rebuilt
        if cid not in t.snapshots and parent is not None and (lost or parent in out):
            out.add(cid)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(DAMAGE)), min_size=1, max_size=3))
def test_damaged_lines_stay_local(template: Template, picks: list[tuple[int, str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        shutil.copytree(template.root / "ws", root / "ws", symlinks=True)
        shutil.copytree(template.root / "store", root / "store", symlinks=True)
        ws, store = root / "ws", root / "store"
        meta = json.loads((store / "store.json").read_text())
        (store / "store.json").write_text(json.dumps({**meta, "workspace": str(ws.resolve())}))
        hit = _apply_damage(store, picks)
        dependent = _should_be_damaged(template, hit)
        with Engine.open(ws, store, config=CONFIG, readonly=True) as ro:
            listed = {c.id: c for c in ro.timeline()}
            assert ro.problems  # damage is reported, never silent
        # Every checkpoint whose line survived is listed; exactly the dependent ones are marked.
        assert set(listed) == (set(template.expected) - hit) | _rebuilt(template, hit)
        assert {c for c, cp in listed.items() if cp.damage} == dependent
        assert all(listed[c].recoverability == "none" for c in dependent)
        with Engine.open(ws, store, config=CONFIG, session_id="s1") as eng:
            # Catch-up recorded the workspace against the newest intact checkpoint: nothing lost.
            now = eng.head.id
            for cid in sorted(listed):
                if cid in dependent:
                    with pytest.raises(RetraceError, match="cannot be restored"):
                        eng.restore(cid, force=True)
                    continue
                outcome = eng.restore(cid, force=True)
                assert outcome.kind in ("applied", "nothingToRestore"), outcome
                assert file_bytes(ws) == template.expected[cid], cid
            eng.restore(now, force=True)
            assert file_bytes(ws) == template.final


def _three_checkpoints_one_line_damaged(cli: Cli, *, copies: bool) -> list[str]:
    """a.txt = a0 (baseline), a1, a2, a3 (checkpoints); the line of the a1 checkpoint is then
    destroyed. ``copies=False``: the store is first made to look like one written before lines
    carried their parent's data (the field is removed from every line, and with it the line
    checksums and format version that came later)."""
    ws = cli.workspace
    (ws / "a.txt").write_text("a0\n")
    cli("init")
    ids = []
    for i in range(3):
        (ws / "a.txt").write_text(f"a{i + 1}\n")
        ids.append(cli("checkpoint").stdout.strip())
    journal = next((cli.store / "sessions").glob("*/journal.jsonl"))
    lines = journal.read_bytes().splitlines()
    if not copies:
        events = [json.loads(ln) for ln in lines]
        assert any("parentDelta" in ev for ev in events)
        old = ("parentDelta", "lineSum", "v")
        lines = [json.dumps({k: v for k, v in ev.items() if k not in old}).encode() for ev in events]
    target = next(i for i, ln in enumerate(lines) if ids[0].encode() in ln)
    lines[target] = b"\0\0\0 not json"
    journal.write_bytes(b"".join(ln + b"\n" for ln in lines))
    return ids


def test_cli_a_damaged_line_loses_only_its_own_checkpoint(cli: Cli) -> None:
    ids = _three_checkpoints_one_line_damaged(cli, copies=True)
    by_id = {c["id"]: c for c in cli.json("log")}
    # The damaged checkpoint is rebuilt from its child's copy; nothing after it is damaged.
    assert ids[0] in by_id and "rebuilt" in by_id[ids[0]]["label"]
    assert not any(c["damage"] for c in by_id.values())
    for i in (2, 0, 1):
        cli("restore", ids[i], "--force")
        assert (cli.workspace / "a.txt").read_text() == f"a{i + 1}\n"
    assert cli("verify", code=4)
    cli("verify", "--repair")
    cli("verify")
    cli("restore", ids[0], "--force")
    assert (cli.workspace / "a.txt").read_text() == "a1\n"


def test_cli_log_and_restore_of_a_damaged_checkpoint_without_copies(cli: Cli) -> None:
    ids = _three_checkpoints_one_line_damaged(cli, copies=False)
    ws = cli.workspace
    log = cli.json("log")
    by_id = {c["id"]: c for c in log}
    assert ids[0] not in by_id
    assert by_id[ids[1]]["recoverability"] == "none" and ids[0] in by_id[ids[1]]["damage"]
    text = cli("log").stdout
    assert "damaged" in text and ids[1] in text
    proc = cli("restore", ids[2], code=1)
    assert ids[2] in proc.stderr and "cannot be restored" in proc.stderr
    assert (ws / "a.txt").read_text() == "a3\n"
    # The baseline is intact and restores.
    cli("restore", log[0]["id"], "--force")
    assert (ws / "a.txt").read_text() == "a0\n"
    # Repair quarantines the line and records what stays lost: verify is then clean, and the
    # log still shows those checkpoints as unrecoverable with the reason.
    assert cli("verify", code=4)
    cli("verify", "--repair")
    cli("verify")
    by_id = {c["id"]: c for c in cli.json("log")}
    for cid in ids[1:]:
        assert by_id[cid]["recoverability"] == "none" and "lost" in by_id[cid]["damage"]


def test_gc_keeps_damaged_lines_and_never_sweeps_blind(tmp_path: Path) -> None:
    from retrace.engine.config import RetentionPolicy

    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    with Engine.open(ws, store, config=CONFIG, session_id="s") as eng:
        for i in range(6):
            (ws / "a.txt").write_text(f"{i + 1}\n")
            eng.checkpoint(label=f"c{i}", kind="tool", tool="edit_file")
    journal = store / "sessions" / "s" / "journal.jsonl"
    with journal.open("ab") as f:
        f.write(b"\0\0 damaged line\n")
    blobs_before = {p.name for p in (store / "blobs").rglob("*") if p.is_file()}
    config = EngineConfig(watcher=False, retention=RetentionPolicy(max_checkpoints=3))
    with Engine.open(ws, store, config=config, session_id="s") as eng:
        report = eng.gc()
        assert report.checkpoints_dropped >= 3
        (ws / "a.txt").write_text("after gc\n")
        eng.checkpoint(label="after gc")
    assert b"\0\0 damaged line" in journal.read_bytes()  # kept for verify --repair
    with Engine.open(ws, store, config=CONFIG, readonly=True) as ro:
        assert ro.timeline()[-1].label == "after gc" and ro.timeline()[-1].damage is None
    # A snapshot that cannot be read: gc must not guess what is dead.
    snaps = [json.loads(ln)["snapshot"] for ln in journal.read_bytes().splitlines() if ln.startswith(b'{"')]
    snap = next(s for s in snaps if s)
    from tests.safety.store_damage import damage_blob

    damage_blob(store, snap, "substitute", evil=b"not a manifest")
    blobs_mid = {p.name for p in (store / "blobs").rglob("*") if p.is_file()}
    with Engine.open(ws, store, config=CONFIG, session_id="s") as eng:
        assert eng.gc().blobs_removed == 0
    assert blobs_mid <= {p.name for p in (store / "blobs").rglob("*") if p.is_file()}
    assert blobs_before  # sanity: the store had blobs to lose


def test_gc_dropped_checkpoints_are_not_rebuilt_from_their_childs_copy(tmp_path: Path) -> None:
    from retrace.engine.config import RetentionPolicy
    from retrace.engine.store.layout import StoreLayout
    from retrace.engine.verify import verify_store

    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    expected: dict[str, bytes] = {}
    with Engine.open(ws, store, config=CONFIG, session_id="s") as eng:
        for i in range(6):
            (ws / "a.txt").write_text(f"{i + 1}\n")
            expected[eng.checkpoint(label=f"c{i}", kind="tool", tool="edit_file").id] = (
                ws / "a.txt"
            ).read_bytes()
    config = EngineConfig(watcher=False, retention=RetentionPolicy(max_checkpoints=3))
    with Engine.open(ws, store, config=config, session_id="s") as eng:
        assert eng.gc().checkpoints_dropped >= 3
        kept = [c.id for c in eng.timeline()]
    with Engine.open(ws, store, config=CONFIG, session_id="s") as eng:
        assert [c.id for c in eng.timeline()] == kept  # nothing dropped comes back
        assert not eng.problems
        assert verify_store(StoreLayout(store)).report.ok
        for cid in kept:
            if cid in expected:
                eng.restore(cid, force=True)
                assert (ws / "a.txt").read_bytes() == expected[cid]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000), how=st.sampled_from(DAMAGE))
def test_one_damaged_line_loses_at_most_its_own_checkpoint(template: Template, pick: int, how: str) -> None:
    """Any ONE damaged line: no other checkpoint is damaged, every checkpoint but the damaged
    one (which is even rebuilt when it has a child) restores byte-exact, before and after
    ``verify --repair``, and the repaired store verifies clean."""
    from retrace.engine.repair import repair_store
    from retrace.engine.store.layout import StoreLayout
    from retrace.engine.verify import verify_store

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        shutil.copytree(template.root / "ws", root / "ws", symlinks=True)
        shutil.copytree(template.root / "store", root / "store", symlinks=True)
        ws, store = root / "ws", root / "store"
        meta = json.loads((store / "store.json").read_text())
        (store / "store.json").write_text(json.dumps({**meta, "workspace": str(ws.resolve())}))
        hit = _apply_damage(store, [(pick, how)])
        childless = hit - _rebuilt(template, hit)
        assert not verify_store(StoreLayout(store)).report.ok
        for repaired in (False, True):
            if repaired:
                assert repair_store(StoreLayout(store)).ok
                assert verify_store(StoreLayout(store)).report.ok
            with Engine.open(ws, store, config=CONFIG, session_id="s1") as eng:
                listed = {c.id: c for c in eng.timeline()}
                assert set(template.expected) - childless <= set(listed)
                assert not [c for c in listed.values() if c.damage], "damage spread past one line"
                for cid in sorted(set(template.expected) - childless):
                    eng.restore(cid, force=True)
                    assert file_bytes(ws) == template.expected[cid], cid
