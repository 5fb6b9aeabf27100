"""Blob store, journals (torn and corrupt lines), store layout and the writer lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrace.engine import Engine
from retrace.engine.errors import RetraceError, StoreCorrupt, StoreLocked, StoreNotInitialised
from retrace.engine.store.blobs import BlobStore, blob_id
from retrace.engine.store.journal import JournalProblems, JournalWriter, read_journal, repair_tail
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.engine.store.lock import StoreLock


def test_blobs_dedup_compress_roundtrip(tmp_path: Path) -> None:
    bs = BlobStore(tmp_path / "blobs")
    data = b"hello " * 1000
    a = bs.put(data)
    b = bs.put(data)
    assert a == b == blob_id(data)
    p = bs.path(a)
    assert p.parent.name == a[:2] and p.stat().st_size < len(data) // 10
    assert bs.get(a) == data and bs.raw_size(a) == len(data)
    assert list(bs.ids()) == [a]
    assert bs.put(b"") == blob_id(b"") and bs.get(blob_id(b"")) == b""
    with pytest.raises(StoreCorrupt, match="missing"):
        bs.get("0" * 64)
    p.write_bytes(b"garbage")
    with pytest.raises(StoreCorrupt, match="cannot be decompressed"):
        bs.get(a)


def test_packs_batch_visibility_compaction_and_strays(tmp_path: Path) -> None:
    bs = BlobStore(tmp_path / "blobs")
    blobs = [f"blob {i}\n".encode() * (i + 1) for i in range(50)]
    with bs.batch() as batch:
        ids = [batch.put(b) for b in blobs]
        assert not bs.has(ids[0]), "invisible until the pack is published"
    assert all(bs.get(i) == b for i, b in zip(ids, blobs, strict=True))
    assert len(list((tmp_path / "blobs" / "packs").glob("*.pack"))) == 1
    count, disk, raw = bs.usage()
    assert count == 50 and raw == sum(len(b) for b in blobs) and 0 < disk < raw
    # A fresh store object finds the pack through its index.
    again = BlobStore(tmp_path / "blobs")
    assert sorted(again.ids()) == sorted(ids) and again.raw_size(ids[3]) == len(blobs[3])
    for i in ids[:40]:
        again.remove(i)
    again.compact_packs()
    assert sorted(again.ids()) == sorted(ids[40:])
    assert all(again.get(i) == b for i, b in zip(ids[40:], blobs[40:], strict=True))
    fresh = BlobStore(tmp_path / "blobs")
    assert sorted(fresh.ids()) == sorted(ids[40:])
    with pytest.raises(StoreCorrupt):
        fresh.get(ids[0])
    # A crash mid-batch leaves a temporary pack: invisible, and swept by gc.
    crashed = fresh.batch()
    crashed.put(b"never published")
    os.close(crashed._fd)
    (tmp_path / "blobs" / "packs" / "orphan.pack").write_bytes(b"no index")
    fresh.remove_stray_tmp()
    assert sorted(p.suffix for p in (tmp_path / "blobs" / "packs").iterdir()) == [".idx", ".pack"]
    assert sorted(BlobStore(tmp_path / "blobs").ids()) == sorted(ids[40:])


def test_journal_torn_last_line_and_repair(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    w = JournalWriter(path)
    w.append({"type": "a", "n": 1})
    w.append({"type": "b", "n": 2})
    w.close()
    with path.open("ab") as f:
        f.write(b'{"type": "c", "n"')  # torn by a crash
    assert [e["type"] for e in read_journal(path)] == ["a", "b"]
    w2 = JournalWriter(path)  # the next writer cuts the torn tail
    w2.append({"type": "d"})
    w2.close()
    assert [e["type"] for e in read_journal(path)] == ["a", "b", "d"]
    assert path.read_bytes().endswith(b"\n")


def test_failed_append_leaves_no_partial_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    path = tmp_path / "j.jsonl"
    w = JournalWriter(path)
    w.append({"type": "a"})
    size = path.stat().st_size

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdatasync", disk_full)
    with pytest.raises(OSError):
        w.append({"type": "lost", "pad": "x" * 100})
    monkeypatch.undo()
    assert path.stat().st_size == size
    w.append({"type": "b"})
    w.close()
    assert [e["type"] for e in read_journal(path)] == ["a", "b"]


def test_journal_corruption_in_the_middle_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"type":"a"}\nNOT JSON\n{"type":"b"}\n')
    problems = JournalProblems()
    assert [e["type"] for e in read_journal(path, problems)] == ["a", "b"]
    assert len(problems.messages) == 1 and ":2:" in problems.messages[0]


def test_repair_tail_without_any_newline(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"type":')
    repair_tail(path)
    assert path.read_bytes() == b""


def test_layout_default_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "my proj"
    ws.mkdir()
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    d = default_store_dir(ws)
    assert d.parent == tmp_path / "xdg" / "retrace" / "stores" and d.name.startswith("my-proj-")
    monkeypatch.setenv("RETRACE_STORE", str(tmp_path / "explicit"))
    assert default_store_dir(ws) == tmp_path / "explicit"


def test_store_meta_errors(tmp_path: Path) -> None:
    layout = StoreLayout(tmp_path / "s")
    with pytest.raises(StoreNotInitialised):
        layout.read_meta()
    layout.init(tmp_path)
    layout.meta.write_text(json.dumps({"formatVersion": 99}))
    with pytest.raises(StoreCorrupt, match="unsupported store format 99"):
        layout.read_meta()


def test_open_readonly_without_store_fails(tmp_path: Path) -> None:
    with pytest.raises(StoreNotInitialised):
        Engine.open(tmp_path, tmp_path.parent / (tmp_path.name + "-nostore"), readonly=True)


def test_store_of_another_workspace_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    Engine.open(a, tmp_path / "s").close()
    with pytest.raises(RetraceError, match="belongs to workspace"):
        Engine.open(b, tmp_path / "s")


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from retrace.engine.store.lock import StoreLock\n"
        f"l = StoreLock(Path({str(lock)!r})); l.acquire(); print('locked', flush=True); time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLocked, match=f"pid {proc.pid}"):
            StoreLock(lock).acquire()
    finally:
        proc.kill()
        proc.wait()
    mine = StoreLock(lock)
    mine.acquire()  # released by the holder's death
    assert lock.read_text().strip() == str(os.getpid())
    mine.release()


def test_missing_blob_is_reported_not_fatal(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("content a")
    store = tmp_path / "s"
    eng = Engine.open(ws, store)
    (ws / "a.txt").write_text("content b")
    cp = eng.checkpoint("b", ["a.txt"])
    (ws / "a.txt").write_text("content c")
    eng.checkpoint("c", ["a.txt"])
    h = eng.head_manifest["a.txt"].hash
    old = cp.id
    old_hash = eng.entries_at(old, ["a.txt"])["a.txt"]
    eng.close()
    assert h is not None and old_hash is not None and old_hash.hash is not None
    BlobStore(store / "blobs").path(old_hash.hash).unlink()
    BlobStore(store / "blobs").path(h).unlink()
    eng2 = Engine.open(ws, store)
    try:
        assert any("missing" in p and old in p for p in eng2.problems)
        with pytest.raises(StoreCorrupt):
            eng2.file_content(old, "a.txt")
        # The head's blob is stored again from the unchanged file on disk (self-healing).
        assert eng2.file_content(eng2.head.id, "a.txt") == b"content c"
        out = eng2.restore(old)
        assert out.kind == "failed" and (ws / "a.txt").read_text() == "content c"
    finally:
        eng2.close()
