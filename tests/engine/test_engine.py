"""The Engine facade end to end on real directories: capture, timeline, restore, conflicts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig
from retrace.engine.errors import PathOutsideWorkspace, RetraceError, StoreLocked, UnknownCheckpoint
from retrace.engine.models import StoreStats
from retrace.engine.store.events import CheckpointEvent, RestoreStatsEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.store_figures import read_store_stats

Open = Callable[..., Engine]


def figures(eng: Engine) -> StoreStats:
    """The store's figures, as ``retrace stats`` reads them."""
    return read_store_stats(StoreLayout(eng.store_dir), eng.blobs)


def test_baseline_then_edit_checkpoint_and_restore(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "one\n")
    write(ws, "dir/b.txt", "bee\n")
    eng = open_engine()
    base = eng.head
    assert base.kind == "baseline" and base.parent is None and base.meta["files"] == 2
    before = entry_hashes(ws)
    write(ws, "a.txt", "one\ntwo\n")
    cp = eng.checkpoint("edit", ["a.txt"], kind="tool", tool="edit_file")
    assert [(f.path, f.status, f.additions, f.deletions) for f in cp.files] == [("a.txt", "modified", 1, 0)]
    assert cp.parent == base.id and eng.head.id == cp.id
    out = eng.restore(base.id)
    assert out.kind == "applied"
    assert entry_hashes(ws) == before
    assert out.checkpoint is not None and out.checkpoint.kind == "restore"
    assert out.checkpoint.restored_from == base.id and out.checkpoint.parent == cp.id
    # Undo of the restore = restore its parent.
    again = eng.restore(out.checkpoint.parent or "")
    assert again.kind == "applied"
    assert (ws / "a.txt").read_text() == "one\ntwo\n"


def test_shell_detection_create_delete_rename_chmod_symlink(ws: Path, open_engine: Open) -> None:
    write(ws, "keep.txt", "k")
    write(ws, "old name.txt", "moving content\n")
    write(ws, "gone.txt", "bye")
    write(ws, "run.sh", "#!/bin/sh\necho hi\n")
    eng = open_engine()
    base_state = entry_hashes(ws)
    subprocess.run(
        "mv 'old name.txt' 'new name.txt' && rm gone.txt && chmod +x run.sh && mkdir -p x/y "
        "&& printf 'z' > x/y/z.bin && ln -s keep.txt link && : > empty",
        shell=True,
        cwd=ws,
        check=True,
    )
    cp = eng.checkpoint("shell", kind="tool", tool="run_command")
    got = {(f.path, f.status, f.old_path) for f in cp.files}
    assert got == {
        ("new name.txt", "renamed", "old name.txt"),
        ("gone.txt", "deleted", None),
        ("run.sh", "modified", None),
        ("x/y/z.bin", "added", None),
        ("link", "added", None),
        ("empty", "added", None),
    }
    after = entry_hashes(ws)
    assert eng.restore(eng.timeline()[0].id).kind == "applied"
    assert entry_hashes(ws) == base_state
    assert not (ws / "x").exists(), "directories emptied by the restore are removed"
    assert eng.restore(cp.id).kind == "applied"
    assert entry_hashes(ws) == after
    assert os.readlink(ws / "link") == "keep.txt"


def test_empty_checkpoint_is_committed(open_engine: Open) -> None:
    eng = open_engine()
    cp = eng.checkpoint("nothing")
    assert cp.files == [] and eng.head.id == cp.id


def test_unrecorded_change_is_a_conflict_and_never_overwritten(ws: Path, open_engine: Open) -> None:
    write(ws, "f.txt", "line1\nfiller\nline2\nline3\n")
    eng = open_engine()
    base = eng.head.id
    write(ws, "f.txt", "line1\nfiller\nline2 agent\nline3\n")
    eng.checkpoint("agent", ["f.txt"], kind="tool")
    # The user edits another part of the file and nobody records it.
    write(ws, "f.txt", "line1 user\nfiller\nline2 agent\nline3\n")
    out = eng.restore(base)
    assert out.kind == "conflict"
    assert (ws / "f.txt").read_text() == "line1 user\nfiller\nline2 agent\nline3\n"
    assert out.plan is not None
    conflict = out.plan.files[0].conflict
    assert conflict is not None and conflict.reason == "unrecorded"
    assert conflict.merged_text == "line1 user\nfiller\nline2\nline3\n"
    merged = eng.restore(base, resolutions={"f.txt": "merge"})
    assert merged.kind == "applied" and merged.safety_checkpoint_id is not None
    assert (ws / "f.txt").read_text() == "line1 user\nfiller\nline2\nline3\n"
    # The user's version is kept in the safety checkpoint.
    assert (
        eng.file_content(merged.safety_checkpoint_id, "f.txt") == b"line1 user\nfiller\nline2 agent\nline3\n"
    )


def test_external_change_conflict_and_resolutions(ws: Path, open_engine: Open) -> None:
    write(ws, "f.txt", "a\n")
    eng = open_engine()
    base = eng.head.id
    write(ws, "f.txt", "b\n")
    eng.checkpoint("agent", ["f.txt"], kind="tool")
    write(ws, "f.txt", "user\n")
    ext = eng.record_external(label="user typed")
    assert ext is not None and ext.kind == "external"
    assert eng.record_external() is None
    out = eng.restore(base)
    assert out.kind == "conflict"
    assert out.plan is not None and out.plan.files[0].conflict is not None
    assert out.plan.files[0].conflict.reason == "external"
    skipped = eng.restore(base, resolutions={"f.txt": "skip"})
    assert skipped.kind == "nothingToRestore"
    assert (ws / "f.txt").read_text() == "user\n"
    forced = eng.restore(base, force=True)
    assert forced.kind == "applied"
    assert (ws / "f.txt").read_text() == "a\n"
    stats = figures(eng)
    # The refused (conflict) restore is journalled but is not a failed restore: only the
    # applied one counts towards the success rate and the latency figures.
    assert (stats.restores, stats.restores_succeeded, stats.restore.count) == (1, 1, 1)
    assert [e.kind for e in eng.events() if isinstance(e, RestoreStatsEvent)] == ["conflict", "applied"]


def test_dry_run_and_plan_never_write(ws: Path, store: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "1")
    eng = open_engine()
    base = eng.head.id
    write(ws, "a.txt", "2")
    eng.checkpoint("x", ["a.txt"])
    write(ws, "b.txt", "unrecorded")
    journal_before = sorted((p, p.stat().st_size) for p in store.rglob("journal.jsonl"))
    plan = eng.plan_restore(base)
    assert plan.counts.overwrite == 1 and plan.files[0].path == "a.txt"
    dry = eng.restore(base, dry_run=True)
    assert dry.kind == "preview" and dry.dry_run
    assert (ws / "a.txt").read_text() == "2"
    assert sorted((p, p.stat().st_size) for p in store.rglob("journal.jsonl")) == journal_before
    # The unrecorded file is still seen by the next real detection.
    cp = eng.checkpoint("detect")
    assert [f.path for f in cp.files] == ["b.txt"]


def test_nothing_to_restore_and_conversation_mode(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "1")
    eng = open_engine()
    out = eng.restore(eng.head.id)
    assert out.kind == "nothingToRestore"
    conv = eng.restore(eng.head.id, mode="conversation")
    assert conv.kind == "nothingToRestore" and "conversation" in conv.reason
    with pytest.raises(RetraceError, match="unknown restore mode"):
        eng.restore(eng.head.id, mode="everything")


def test_paths_narrow_the_scope(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "a1")
    write(ws, "b.txt", "b1")
    eng = open_engine()
    base = eng.head.id
    write(ws, "a.txt", "a2")
    write(ws, "b.txt", "b2")
    eng.checkpoint("both", ["a.txt", "b.txt"])
    out = eng.restore(base, paths=["b.txt"])
    assert out.kind == "applied"
    assert (ws / "a.txt").read_text() == "a2" and (ws / "b.txt").read_text() == "b1"


def test_size_cap_is_partial_and_never_pretended(ws: Path, open_engine: Open) -> None:
    write(ws, "small.txt", "s")
    eng = open_engine(config=EngineConfig(max_file_bytes=100))
    base = eng.head.id
    write(ws, "big.bin", b"x" * 500)
    write(ws, "small.txt", "s2")
    cp = eng.checkpoint("big")
    assert cp.recoverability == "partial"
    assert [u.path for u in cp.unrecoverable] == ["big.bin"]
    assert "over size cap" in cp.unrecoverable[0].reason
    with pytest.raises(RetraceError, match="not stored"):
        eng.file_content(cp.id, "big.bin")
    write(ws, "big.bin", b"y" * 600)
    cp2 = eng.checkpoint("bigger")
    assert cp2.recoverability == "none"
    out = eng.restore(cp.id)
    assert out.plan is not None and [u.path for u in out.plan.unrecoverable] == ["big.bin"]
    assert out.kind == "failed"
    assert "big.bin" in out.error and (ws / "big.bin").read_bytes() == b"y" * 600
    # Restoring the baseline would delete the big file, whose bytes are in no checkpoint:
    # a conflict, never a silent loss; only an explicit overwrite deletes it.
    back = eng.restore(base)
    assert back.kind == "conflict" and [f.path for f in back.files] == ["big.bin"]
    assert (ws / "big.bin").read_bytes() == b"y" * 600 and (ws / "small.txt").read_text() == "s2"
    kept = eng.restore(base, resolutions={"big.bin": "skip"})
    assert kept.kind == "applied" and (ws / "big.bin").exists() and (ws / "small.txt").read_text() == "s"
    forced = eng.restore(base, force=True)
    assert forced.kind == "applied" and not (ws / "big.bin").exists()


def test_nested_git_repo_is_never_touched(ws: Path, open_engine: Open) -> None:
    subprocess.run(["git", "init", "-q", str(ws / "inner")], check=True)
    write(ws, "inner/code.py", "print(1)\n")
    write(ws, "inner/.gitignore", "*.log\n")
    write(ws, "inner/debug.log", "ignored")
    subprocess.run(["git", "-C", str(ws / "inner"), "add", "."], check=True)
    git_before = entry_hashes(ws / "inner" / ".git", include_git=True)
    eng = open_engine()
    base = eng.head.id
    write(ws, "inner/code.py", "print(2)\n")
    write(ws, "inner/debug.log", "still ignored")
    cp = eng.checkpoint("shell")
    assert [f.path for f in cp.files] == ["inner/code.py"]
    assert eng.restore(base).kind == "applied"
    assert (ws / "inner/code.py").read_text() == "print(1)\n"
    assert entry_hashes(ws / "inner" / ".git", include_git=True) == git_before
    assert not any(".git/" in p or p.startswith(".git") for p in eng.head_manifest)


def test_ignore_rules(ws: Path, open_engine: Open) -> None:
    write(ws, ".gitignore", "*.tmp\n/out/\n!keep.tmp\n")
    write(ws, "a.tmp", "x")
    write(ws, "keep.tmp", "x")
    write(ws, "out/o.txt", "x")
    write(ws, "src/out/o.txt", "x")
    write(ws, "node_modules/m/index.js", "x")
    write(ws, "node_modules/.package-lock.json", "{}")  # npm's marker: a tool folder
    write(ws, "sub/.gitignore", "local.txt\n")
    write(ws, "sub/local.txt", "x")
    write(ws, "local.txt", "x")
    write(ws, "secret.env", "x")
    eng = open_engine(config=EngineConfig(excludes=["*.env"]))
    tracked = sorted(eng.head_manifest)
    assert tracked == [".gitignore", "keep.tmp", "local.txt", "src/out/o.txt", "sub/.gitignore"]


def test_paths_outside_workspace_are_refused(ws: Path, tmp_path: Path, open_engine: Open) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("x")
    os.symlink(outside, ws / "escape")
    eng = open_engine()
    assert "escape" in eng.head_manifest and eng.head_manifest["escape"].kind == "symlink"
    for bad in ["../outside/x.txt", str(outside / "x.txt"), "escape/x.txt", "."]:
        with pytest.raises(PathOutsideWorkspace):
            eng.checkpoint("bad", [bad])


def test_get_by_prefix_and_timeline(ws: Path, open_engine: Open) -> None:
    eng = open_engine()
    cps = [eng.checkpoint(f"c{i}") for i in range(5)]
    assert eng.get(cps[2].id[:12]).id == cps[2].id
    with pytest.raises(UnknownCheckpoint):
        eng.get("zzzzzzzz")
    with pytest.raises(UnknownCheckpoint):
        eng.get(cps[0].id[:3])
    with pytest.raises(UnknownCheckpoint):
        eng.get(cps[0].id[:4])  # ambiguous: all ids share the time prefix
    ids = [c.id for c in eng.timeline()]
    assert ids == sorted(ids) and ids[1:] == [c.id for c in cps]
    assert eng.manifest(cps[1].id[:12]) == eng.head_manifest and eng.manifest(ids[0]) is not eng.head_manifest
    s2 = eng.new_session()
    other = eng.checkpoint("other session")
    assert [c.id for c in eng.timeline(s2)] == [other.id]
    assert set(eng.sessions()) >= {s2, cps[0].session_id}


def test_lock_and_readonly(ws: Path, store: Path, open_engine: Open) -> None:
    eng = open_engine()
    with pytest.raises(StoreLocked, match=f"pid {os.getpid()}"):
        Engine.open(ws, store)
    ro = Engine.open(ws, store, readonly=True)
    try:
        assert ro.head.id == eng.head.id
        with pytest.raises(RetraceError, match="read-only"):
            ro.checkpoint("nope")
        write(ws, "new.txt", "x")
        assert [f.path for f in ro.diff(ro.head.id)] == ["new.txt"]
    finally:
        ro.close()


def test_store_inside_workspace_is_refused(ws: Path) -> None:
    with pytest.raises(RetraceError, match="inside the workspace"):
        Engine.open(ws, ws / ".retrace")


def test_reopen_records_external_changes_and_rehashes_little(
    ws: Path, store: Path, open_engine: Open
) -> None:
    for i in range(20):
        write(ws, f"f{i}.txt", str(i))
    eng = open_engine()
    first = eng.head.id
    eng.close()
    write(ws, "f3.txt", "changed while closed")
    os.remove(ws / "f4.txt")
    eng2 = open_engine()
    head = eng2.head
    assert head.kind == "external" and head.parent == first
    assert {(f.path, f.status) for f in head.files} == {("f3.txt", "modified"), ("f4.txt", "deleted")}
    eng2.close()
    eng3 = open_engine()
    assert eng3.head.id == head.id, "nothing changed: no new checkpoint"


def test_diff_and_unified_diff(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "1\n2\n3\n")
    eng = open_engine()
    base = eng.head.id
    write(ws, "a.txt", "1\ntwo\n3\n")
    write(ws, "bin.dat", b"\x00\x01")
    cp = eng.checkpoint("c")
    changes = {c.path: c for c in eng.diff(base, cp.id)}
    assert changes["a.txt"].additions == 1 and changes["a.txt"].deletions == 1
    assert changes["bin.dat"].status == "added" and changes["bin.dat"].binary
    write(ws, "a.txt", "uncommitted\n")
    live = {c.path for c in eng.diff(cp.id)}
    assert live == {"a.txt"}
    text = eng.unified_diff(base, cp.id)
    assert "-2\n+two\n" in text and "Binary files" in text


def test_events_and_append_event(ws: Path, open_engine: Open) -> None:
    from retrace.engine.store.event_log import EventReport
    from retrace.engine.store.journal import seal_event

    eng = open_engine(session_id="sess-1")
    eng.append_event(TurnEvent(turn_id="t1", text="go"))
    # A type this version does not know (a newer writer's) is read through, never damage.
    with eng.journal_writer("sess-1").path.open("ab") as f:
        f.write(seal_event({"type": "turnStarted", "turnId": "t1"}) + b"\n")
    eng.checkpoint("c", kind="tool", turn_id="t1")
    report = EventReport()
    typed = list(eng.events("sess-1", report))
    assert [type(e) for e in typed] == [CheckpointEvent, TurnEvent, CheckpointEvent]
    assert isinstance(typed[1], TurnEvent) and typed[1].turn_id == "t1" and typed[1].ts > 0
    assert isinstance(typed[2], CheckpointEvent) and typed[2].checkpoint.turn_id == "t1"
    assert report.unknown == {"turnStarted": 1} and report.damaged == []
    # Only typed events are appended: a mapping is refused with a clear error.
    for bad in ({"no": "type"}, {"type": "turn", "turnId": "t2", "text": "x"}):
        with pytest.raises(RetraceError, match="event models"):
            eng.append_event(bad)  # type: ignore[arg-type]


def test_commit_applied_restore_verifies(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "1")
    eng = open_engine()
    base = eng.head.id
    write(ws, "a.txt", "2")
    write(ws, "b.txt", "new")
    eng.checkpoint("c")
    plan = eng.plan_restore(base)
    assert eng.take_safety_checkpoint() is None
    # The "editor" applies only half of it.
    write(ws, "a.txt", "1")
    bad = eng.commit_applied_restore(plan)
    assert bad.kind == "failed" and not bad.rolled_back and "b.txt" in bad.error
    os.remove(ws / "b.txt")
    good = eng.commit_applied_restore(plan, conversation="msg-1")
    assert good.kind == "applied" and good.checkpoint is not None
    assert good.checkpoint.restored_from == base and good.checkpoint.conversation == "msg-1"
    assert eng.restore(base).kind == "nothingToRestore"


def test_stats_and_gc(ws: Path, open_engine: Open) -> None:
    from retrace.engine.config import RetentionPolicy

    eng = open_engine(config=EngineConfig(retention=RetentionPolicy(max_checkpoints=5)))
    for i in range(12):
        write(ws, "f.txt", f"version {i}\n" * 50)
        eng.checkpoint(f"v{i}", ["f.txt"], kind="tool", tool="write_file")  # a mark would be kept
    s = figures(eng)
    assert s.checkpoints == 13 and s.capture.count == 12 and s.blobs >= 13
    head = eng.head.id
    report = eng.gc()
    assert report.checkpoints_dropped == 8 and report.blobs_removed >= 7
    assert len(eng.timeline()) == 5 and eng.head.id == head
    # Every kept checkpoint still restores byte-exact, also after a reopen.
    kept = [c.id for c in eng.timeline()]
    eng.close()
    eng2 = open_engine()
    for i, cid in zip(range(7, 12), kept, strict=True):
        assert eng2.file_content(cid, "f.txt") == (f"version {i}\n" * 50).encode()
    assert eng2.restore(kept[0]).kind == "applied"
    assert (ws / "f.txt").read_text() == "version 7\n" * 50


def test_gc_compacts_packed_baseline_blobs(ws: Path, open_engine: Open) -> None:
    from retrace.engine.config import RetentionPolicy

    for i in range(60):
        write(ws, f"many/f{i}.txt", f"content {i}\n" * 20)
    eng = open_engine(config=EngineConfig(retention=RetentionPolicy(max_checkpoints=1)))
    assert figures(eng).blobs >= 60
    for i in range(50):
        os.remove(ws / f"many/f{i}.txt")
    write(ws, "many/f55.txt", "changed\n")
    cp = eng.checkpoint("prune")
    report = eng.gc()
    # 50 deleted files + the old f55 + the dropped baseline's manifest snapshot.
    assert report.checkpoints_dropped == 1 and report.blobs_removed == 52 and report.bytes_freed > 0
    assert [c.id for c in eng.timeline()] == [cp.id]
    eng.close()
    eng2 = open_engine()
    assert eng2.head.id == cp.id and eng2.problems == []
    for i in range(50, 60):
        want = b"changed\n" if i == 55 else f"content {i}\n".encode() * 20
        assert eng2.file_content(cp.id, f"many/f{i}.txt") == want


def test_line_stats_budget_lists_changes_without_counts(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retrace.engine.commit as commit_module

    eng = open_engine()
    monkeypatch.setattr(commit_module, "LINE_STATS_BUDGET_S", -1.0)
    for i in range(3):
        write(ws, f"f{i}.txt", "a\nb\n")
    cp = eng.checkpoint("big shell")
    assert [f.path for f in cp.files] == ["f0.txt", "f1.txt", "f2.txt"]
    assert all(f.additions == 0 for f in cp.files) and cp.meta["lineStatsOmitted"] == 3
    assert {f.path: f.additions for f in eng.diff(eng.timeline()[0].id, cp.id)} == {
        "f0.txt": 2,
        "f1.txt": 2,
        "f2.txt": 2,
    }


def test_disk_full_is_a_clear_error_and_loses_nothing(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from retrace.engine.errors import StorageFull
    from retrace.engine.store.journal import JournalWriter

    write(ws, "a.txt", "1")
    eng = open_engine()
    head = eng.head.id
    real_append = JournalWriter.append

    def full(self: JournalWriter, event: dict[str, object]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(JournalWriter, "append", full)
    write(ws, "a.txt", "2")
    with pytest.raises(StorageFull, match="not recorded"):
        eng.checkpoint("x", ["a.txt"])
    assert eng.head.id == head and eng.head_manifest["a.txt"].size == 1
    monkeypatch.setattr(JournalWriter, "append", real_append)
    cp = eng.checkpoint("y", ["a.txt"])
    assert [f.path for f in cp.files] == ["a.txt"] and cp.parent == head
