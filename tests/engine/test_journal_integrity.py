"""Journal integrity: every line carries its own checksum, and every path read back from a line
passes the one workspace rule before anything is built from it (ISSUE25 items 1 and 3).

* a one-bit flip or a substituted byte in any line of a real journal is either reported as
  damage or provably harmless (the history reads back exactly the same): never a checkpoint
  whose manifest silently differs;
* a line that lost its checksum is damage in a journal written by this version; a v1 journal
  (no checksums) is read forever, also once this version has appended to it;
* a forged line (checksum redone) naming ``..``, absolute, ``.git``, NUL… paths restores nothing
  there; ``verify`` names it.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retrace.engine import Engine, EngineConfig
from retrace.engine.errors import RetraceError
from retrace.engine.store.journal import reencode, seal_event
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.seal import SUM_KEY, SealGuard, check_line, seal_line, verify_line
from retrace.engine.verify import verify_store
from retrace.engine.workspace import EscapeError, normalize_rel, stored_rel

CONFIG = EngineConfig(watcher=False)


# --------------------------------------------------------------------------- the seal itself


def test_a_sealed_line_checks_itself_and_every_bit_flip_breaks_it() -> None:
    body = json.dumps({"type": "checkpoint", "v": 2, "delta": {"notes.txt": {"mode": 420}}}).encode()
    line = seal_line(body.replace(b" ", b""))
    assert verify_line(line) and check_line(line) == "sealed"
    assert json.loads(line)[SUM_KEY]
    for i in range(len(line)):
        for bit in range(8):
            bad = bytearray(line)
            bad[i] ^= 1 << bit
            assert check_line(bytes(bad)) != "sealed", (i, bit)


def test_the_legacy_rule() -> None:
    guard = SealGuard()
    assert guard.problem("legacy", None) is None  # a v1 line at the start of a journal
    assert guard.problem("legacy", 1) is None
    assert guard.problem("sealed", 2) is None
    assert guard.problem("legacy", 1) is not None  # after a sealed line: a stripped checksum
    assert SealGuard().problem("legacy", 2) is not None  # claims the checksummed format
    assert SealGuard().problem("broken", 2) is not None


def test_gc_keeps_each_line_in_its_own_format() -> None:
    ev = {"type": "x", "a": 1}
    assert check_line(reencode(ev, sealed=False)) == "legacy"
    assert check_line(reencode(ev, sealed=True)) == "sealed"
    assert check_line(seal_event({**ev, SUM_KEY: "0" * 16})) == "sealed"


# --------------------------------------------------------------------------- a real journal


def _make_store(ws: Path, store: Path) -> None:
    (ws / "notes.txt").write_text("first\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print(1)\n")
    with Engine.open(ws, store, config=CONFIG) as eng:
        for i in range(6):
            (ws / f"src/m{i}.py").write_text(f"x = {i}\n")
            if i % 2:
                (ws / "notes.txt").write_text(f"notes {i}\n")
                os.chmod(ws / "src" / "app.py", 0o755 if i == 3 else 0o644)
            if i == 4:
                (ws / "src" / "m0.py").unlink()
            eng.checkpoint(label=f"step {i}")


def _history(ws: Path, store: Path) -> dict[str, dict[str, tuple[str, str | None, bool]]]:
    """checkpoint id → its manifest, for every checkpoint that is not marked damaged."""
    out: dict[str, dict[str, tuple[str, str | None, bool]]] = {}
    with Engine.open(ws, store, config=CONFIG, readonly=True) as eng:
        for cp in eng.timeline():
            if cp.damage is not None:
                continue
            try:
                m = eng.manifest(cp.id)
            except RetraceError:
                continue
            out[cp.id] = {p: (e.kind, e.hash, e.executable) for p, e in m.items()}
    return out


@pytest.fixture(scope="module")
def pristine(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, dict[str, dict[str, tuple[str, str | None, bool]]]]:
    base = tmp_path_factory.mktemp("integrity")
    ws, store = base / "ws", base / "store"
    ws.mkdir()
    _make_store(ws, store)
    return ws, store, _history(ws, store)


def _journal_lines(store: Path) -> list[tuple[Path, int, int]]:
    """(journal, line start offset, line length) of every line of every journal."""
    out = []
    for journal in sorted((store / "sessions").glob("*/journal.jsonl")):
        data = journal.read_bytes()
        pos = 0
        for line in data.split(b"\n")[:-1]:
            out.append((journal, pos, len(line) + 1))  # with its newline
            pos += len(line) + 1
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.integers(min_value=0, max_value=10_000),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    change=st.one_of(
        st.integers(0, 7).map(lambda b: ("flip", b)), st.integers(0, 255).map(lambda v: ("byte", v))
    ),
)
@example(which=0, where=0.999, change=("flip", 0))  # the newline of a line
def test_random_damage_in_a_journal_line_is_reported_or_harmless(
    pristine: tuple[Path, Path, dict[str, dict[str, tuple[str, str | None, bool]]]],
    tmp_path_factory: pytest.TempPathFactory,
    which: int,
    where: float,
    change: tuple[str, int],
) -> None:
    ws, clean, truth = pristine
    store = tmp_path_factory.mktemp("damaged") / "store"
    shutil.copytree(clean, store)
    shutil.rmtree(store / "cache", ignore_errors=True)
    lines = _journal_lines(store)
    journal, start, length = lines[which % len(lines)]
    data = bytearray(journal.read_bytes())
    at = start + int(where * length)
    old = data[at]
    data[at] = old ^ (1 << change[1]) if change[0] == "flip" else change[1]
    if data[at] == old:
        return
    journal.write_bytes(bytes(data))
    report = verify_store(StoreLayout(store)).report
    after = _history(ws, store)
    for cid, manifest in after.items():
        # NEVER a silently different tree: a checkpoint that still reads is the one recorded.
        assert cid in truth, f"a checkpoint id appeared from nowhere: {cid}"
        assert manifest == truth[cid], f"checkpoint {cid} reads back a different tree"
    if report.ok:
        assert after == truth, "no damage reported but the history changed"
    else:
        assert report.damage, report


def test_a_flip_in_a_checkpoint_line_is_checksum_damage_and_stays_local(ws: Path, store: Path) -> None:
    _make_store(ws, store)
    truth = _history(ws, store)
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    lines = journal.read_bytes().split(b"\n")
    n = next(i for i, ln in enumerate(lines) if b'"label":"step 2"' in ln)
    assert b'"notes.txt"' in lines[n - 1] or b'"src/m2.py"' in lines[n]
    lines[n] = lines[n].replace(b'"src/m2.py"', b'"src/m2.pz"', 1)  # one bit: y -> z
    journal.write_bytes(b"\n".join(lines))
    report = verify_store(StoreLayout(store)).report
    assert not report.ok
    assert [d.kind for d in report.damage] == ["checksum"]
    assert "checksum does not match" in report.damage[0].reason
    after = _history(ws, store)
    # Rebuilt from the next line's copy: the tree is the recorded one, the rest still loads.
    assert {c: m for c, m in after.items() if c in truth} == {c: truth[c] for c in after if c in truth}
    assert len(after) >= len(truth) - 1


def test_a_stripped_checksum_is_damage_in_a_journal_of_this_version(ws: Path, store: Path) -> None:
    _make_store(ws, store)
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    lines = journal.read_bytes().split(b"\n")
    n = len(lines) - 2  # the last checkpoint
    ev = json.loads(lines[n])
    ev.pop(SUM_KEY)
    for variant in (ev, {**ev, "v": 1}, {k: v for k, v in ev.items() if k != "v"}):
        forged = dict(variant)
        forged["delta"] = {"notes.txt": None}
        lines[n] = json.dumps(forged, separators=(",", ":")).encode()
        journal.write_bytes(b"\n".join(lines))
        report = verify_store(StoreLayout(store)).report
        assert [d.kind for d in report.damage] == ["checksum"], variant.get("v")
        assert "checksum is missing" in report.damage[0].reason


def test_this_version_appends_to_a_v1_journal_and_reads_both(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "journal-v1"
    ws, store = tmp_path / "ws", tmp_path / "store"
    shutil.copytree(fixture / "workspace", ws)
    shutil.copytree(fixture, store, ignore=shutil.ignore_patterns("workspace", "README.md"))
    meta = json.loads((store / "store.json").read_text())
    (store / "store.json").write_text(json.dumps({**meta, "workspace": str(ws.resolve())}))
    with Engine.open(ws, store, config=CONFIG, session_id="cli") as eng:
        (ws / "new.txt").write_text("new\n")
        cp = eng.checkpoint(label="after v1")
    journal = store / "sessions" / "cli" / "journal.jsonl"
    kinds = [check_line(ln) for ln in journal.read_bytes().split(b"\n") if ln]
    assert kinds[0] == "legacy" and kinds[-1] == "sealed"
    assert verify_store(StoreLayout(store)).report.ok
    with Engine.open(ws, store, config=CONFIG, readonly=True) as ro:
        assert ro.problems == []
        assert "new.txt" in ro.manifest(cp.id)


# --------------------------------------------------------------------------- paths from stored data

ESCAPES = [
    "../outside/x",
    "a/../../outside/x",
    "/tmp/retrace-abs-escape",
    ".git/config",
    "src/.git/hooks/pre-commit",
    "a\x00b",
    "./x",
    "a//b",
    "a/",
    "",
    "..",
]


_PIECES = st.sampled_from(["a", "b", ".", "/", "\\", "\x00", " ", "g", ":", "i", "t", ".git", "..", "é"])


@given(st.lists(_PIECES, max_size=10).map("".join) | st.text(max_size=12))
@example("a/.git/x")
@example("..")
def test_a_stored_path_that_passes_the_rule_stays_inside_and_out_of_git(path: str) -> None:
    try:
        got = stored_rel(path, windows=False)
    except EscapeError:
        # Refused exactly when the one rule refuses it, changes it, or it names .git.
        try:
            normal = normalize_rel(path, windows=False)
        except EscapeError:
            return
        assert normal != path or ".git" in path.split("/"), path
        return
    assert got == path == normalize_rel(path, windows=False)
    joined = posixpath.normpath(posixpath.join("/root/ws", path))
    assert joined.startswith("/root/ws/")
    assert ".git" not in path.split("/")
    assert "\x00" not in path


def _forge(store: Path, path: str, *, entry: dict[str, object] | None = None) -> str:
    """Rewrite the newest checkpoint line so its delta also holds ``path`` (an exec-bit file of
    existing content), checksum redone: only the path rule stands in the way."""
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    lines = journal.read_bytes().split(b"\n")
    n = max(i for i, ln in enumerate(lines) if b'"type":"checkpoint"' in ln)
    ev = json.loads(lines[n])
    some = next(e for e in ev["delta"].values() if e is not None and e["kind"] == "file")
    ev["delta"][path] = entry or {**some, "executable": True}
    ev["checkpoint"]["files"].append({"path": path, "status": "added"})
    lines[n] = seal_event(ev)
    journal.write_bytes(b"\n".join(lines))
    return str(ev["checkpoint"]["id"])


@pytest.mark.parametrize("bad", ESCAPES)
def test_a_forged_path_is_damage_never_a_restore_instruction(tmp_path: Path, bad: str) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    _make_store(ws, store)
    cid = _forge(store, bad)
    report = verify_store(StoreLayout(store)).report
    assert not report.ok
    kinds = [d.kind for d in report.damage]
    assert kinds == ["path"], report.damage
    assert report.damage[0].checkpoint_id == cid
    assert any(a.id == cid and "not inside the workspace" in a.reason for a in report.affected)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with Engine.open(ws, store, config=CONFIG) as eng:
        cp = eng.get(cid)
        assert cp.recoverability == "partial"
        assert all(f.path != bad for f in cp.files)
        assert bad not in eng.manifest(cid)
        first = eng.timeline()[0].id
        eng.restore(first, force=True)
        eng.restore(cid, force=True)
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    outside = [p for p in set(after) - set(before) if not p.startswith(("ws/", "store/"))]
    assert outside == []
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not Path("/tmp/retrace-abs-escape").exists()


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "directory", "hash": None, "size": 0},
        {"kind": "file", "hash": "../../x", "size": 1},
        {"kind": "file", "hash": None, "size": -1},
        {"kind": "symlink", "hash": None, "size": 1},
        "not an object",
    ],
)
def test_a_forged_entry_is_damage(ws: Path, store: Path, entry: object) -> None:
    _make_store(ws, store)
    cid = _forge(store, "fine.txt", entry=entry)  # type: ignore[arg-type]
    report = verify_store(StoreLayout(store)).report
    assert [d.kind for d in report.damage] == ["path"]
    with Engine.open(ws, store, config=CONFIG, readonly=True) as eng:
        assert "fine.txt" not in eng.manifest(cid)


def test_a_snapshot_with_an_escaping_path_is_unusable(ws: Path, store: Path) -> None:
    _make_store(ws, store)
    with Engine.open(ws, store, config=CONFIG) as eng:
        base = eng.timeline()[0]
        snap = eng.history.snapshots[base.id]
        rows = json.loads(eng.read_blob(snap))
        rows.append(["../evil.sh", "file", rows[0][2], rows[0][3], 1, None, None])
        forged = eng.blobs.put(json.dumps(rows).encode())
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    text = journal.read_bytes().split(b"\n")
    ev = json.loads(text[0])
    ev["snapshot"] = forged
    text[0] = seal_event(ev)
    journal.write_bytes(b"\n".join(text))
    report = verify_store(StoreLayout(store)).report
    assert not report.ok
    assert any(d.kind == "snapshot" and "outside the workspace" in d.reason for d in report.damage)
    with Engine.open(ws, store, config=CONFIG) as eng, pytest.raises(RetraceError):
        eng.restore(base.id, force=True)
    assert not (ws.parent / "evil.sh").exists()


def test_a_restore_intent_with_an_escaping_path_is_skipped(ws: Path, store: Path) -> None:
    from retrace.engine.store.events import EventSchemaError, parse_event

    with pytest.raises(EventSchemaError):
        parse_event(
            {"type": "restoreIntent", "restoreId": "r", "preHead": "a", "targetId": "b", "paths": ["../x"]}
        )
    _make_store(ws, store)
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    ev = {
        "type": "restoreIntent",
        "restoreId": "r1",
        "preHead": "a",
        "targetId": "b",
        "paths": ["ok.txt", "../x"],
    }
    with journal.open("ab") as f:
        f.write(seal_event(ev) + b"\n")
    report = verify_store(StoreLayout(store)).report
    assert [d.kind for d in report.damage] == ["path"]
    assert "restore intent" in report.damage[0].reason


def _editor_forge(store: Path) -> str:
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    lines = journal.read_bytes().split(b"\n")
    n = max(i for i, ln in enumerate(lines) if b'"type":"checkpoint"' in ln)
    ev = json.loads(lines[n])
    ev["checkpoint"]["editorState"] = {
        "buffers": [{"path": "../../.bashrc", "text": "evil"}, {"path": "ok.txt", "text": "fine"}],
        "activeEditor": {"path": "/etc/passwd"},
    }
    lines[n] = seal_event(ev)
    journal.write_bytes(b"\n".join(lines))
    return str(ev["checkpoint"]["id"])


def test_editor_state_paths_pass_the_rule(ws: Path, store: Path) -> None:
    _make_store(ws, store)
    cid = _editor_forge(store)
    with Engine.open(ws, store, config=CONFIG, readonly=True) as eng:
        state = eng.get(cid).editor_state
    assert state == {"buffers": [{"path": "ok.txt", "text": "fine"}], "activeEditor": None}
    assert len([d for d in verify_store(StoreLayout(store)).report.damage if d.kind == "path"]) == 2


def test_repair_cleans_a_forged_path_and_quarantines_the_original(ws: Path, store: Path) -> None:
    from retrace.engine.repair import repair_store

    _make_store(ws, store)
    cid = _forge(store, "../outside/x")
    journal = next((store / "sessions").glob("*/journal.jsonl"))
    with journal.open("ab") as f:
        f.write(b'{"type":"turn","turnId":"t","text":"x"}\n')  # legacy after sealed: damage
    report = repair_store(StoreLayout(store))
    assert report.ok, report
    assert report.quarantine is not None
    kept = (Path(report.quarantine) / "bad-lines.txt").read_bytes()
    assert b"../outside/x" in kept and b'"turnId":"t"' in kept
    events = [json.loads(ln) for ln in journal.read_bytes().split(b"\n") if ln]
    assert not any("../outside/x" in (ev.get("delta") or {}) for ev in events)
    assert not any(
        f["path"] == "../outside/x" for ev in events for f in ev.get("checkpoint", {}).get("files", [])
    )
    assert all(check_line(ln) == "sealed" for ln in journal.read_bytes().split(b"\n") if ln)
    with Engine.open(ws, store, config=CONFIG, readonly=True) as eng:
        cp = eng.get(cid)
        assert cp.recoverability == "partial"
        assert any("outside" in u.path and "ignored" in u.reason for u in cp.unrecoverable)
        assert eng.problems == []
