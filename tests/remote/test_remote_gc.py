"""Remote GC against a real S3 server: garbage goes, nothing referenced does — also while a writer
keeps checkpointing and pushing, and while local retention rewrites its journal (a new
generation). Afterwards every checkpoint of every session in the bucket restores byte-exact on a
fresh machine."""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from pathlib import Path

import pytest
import zstandard
from tests.oracles import entry_hashes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import Engine, EngineConfig
from retrace.engine.config import RetentionPolicy
from retrace.sync import gc, keys, packs
from retrace.sync.models import RemoteGcReport
from retrace.sync.objects import Bucket

pytestmark = pytest.mark.slow


GRACE_S = 4.0  # far above one push here: the grace period bounds how long a push may take


def bucket_of(m: Machine) -> Bucket:
    config = next(iter(m.service().remotes()))
    return Bucket(config, m.s3.env())


def orphan_pack(bucket: Bucket, text: str) -> str:
    data = text.encode()
    bid = hashlib.sha256(data).hexdigest()
    built = packs.build_pack([(bid, zstandard.ZstdCompressor().compress(data), len(data))], None)
    bucket.put(keys.pack_key(built.name), built.data)
    bucket.put(keys.index_key(built.name), built.index)
    return built.name


def pack_names(s3: S3Server) -> set[str]:
    return {Path(k).stem for k in s3.objects() if k.startswith("team/proj/packs/") and k.endswith(".pack")}


def generations(s3: S3Server) -> set[int]:
    segs = (keys.parse_segment(k.removeprefix("team/proj/")) for k in s3.objects() if k.endswith(".seg"))
    return {s.gen for s in segs if s is not None}


def restore_everything(fresh: Machine, expected: dict[str, dict[str, tuple[str, bool]]]) -> int:
    """Open every session of the bucket on ``fresh`` and restore each known checkpoint."""
    svc = fresh.add_remote()
    restored = 0
    sessions = svc.sessions()
    assert sessions
    for s in sessions:
        svc.open(s.session_id, store_id=s.store_id)
    with Engine.open(fresh.ws, fresh.store, blob_source=svc.blob_source()) as eng:
        assert eng.problems == []
        for s in sessions:
            for cp in eng.timeline(s.session_id):
                if cp.id not in expected:
                    continue
                eng.restore(cp.id, force=True)
                assert entry_hashes(fresh.ws, include_git=True) == expected[cp.id], (
                    f"checkpoint {cp.id} of {s.session_id}"
                )
                restored += 1
    return restored


def test_gc_deletes_garbage_in_two_phases_and_keeps_what_is_referenced(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    expected: dict[str, dict[str, tuple[str, bool]]] = {}
    (a.ws / "keep.txt").write_text("kept forever\n")
    with a.engine("s1") as eng:
        for i in range(3):
            (a.ws / "f.txt").write_text(f"version {i}\n")
            expected[eng.checkpoint(f"v{i}").id] = entry_hashes(a.ws, include_git=True)
    svc = a.add_remote()
    svc.push()
    bucket = bucket_of(a)
    orphan = orphan_pack(bucket, "nobody references this " + uuid.uuid4().hex)
    live_packs = pack_names(s3) - {orphan}

    dry = svc.gc(grace_hours=0, dry_run=True)
    assert dry.dry_run and dry.packs_condemned == 1 and dry.packs_deleted == 0
    assert not [k for k in s3.objects() if "/gc/" in k], "a dry run writes nothing"

    first = svc.gc(grace_hours=0)
    assert (first.packs_condemned, first.packs_deleted) == (1, 0)
    assert f"team/proj/gc/condemned/{orphan}.json" in s3.objects()
    assert orphan in pack_names(s3), "phase one only marks"

    second = svc.gc(grace_hours=0)
    assert second.packs_deleted == 1 and second.bytes_freed > 0
    assert pack_names(s3) == live_packs
    assert not [k for k in s3.objects() if "/gc/condemned/" in k]

    # A long grace period keeps even garbage: a fresh orphan is not condemned.
    orphan_pack(bucket, "young garbage " + uuid.uuid4().hex)
    assert svc.gc(grace_hours=1).packs_condemned == 0

    assert restore_everything(Machine.make(tmp_path, s3, "fresh"), expected) == 3


def test_condemned_pack_referenced_again_is_released_not_deleted(tmp_path: Path, s3: S3Server) -> None:
    """A writer that deduplicated against a pack before it was condemned references it; the
    second pass sees the reference and releases the mark."""
    a = Machine.make(tmp_path, s3, "a")
    content = "shared content " + uuid.uuid4().hex + "\n"
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text("first\n")
        eng.checkpoint("one")
    svc = a.add_remote()
    svc.push()
    bucket = bucket_of(a)
    orphan = orphan_pack(bucket, content)
    assert svc.gc(grace_hours=0).packs_condemned == 1
    # The writer now references the orphan's blob (it is already "in the remote" for a pusher
    # that refreshed its index before the mark): simulate by writing that content and pushing a
    # segment whose blob is only in the condemned pack.
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text(content)
        eng.checkpoint("two")
    svc.push()  # the pusher sees the mark: uploads the blob again in a pack of its own
    report = svc.gc(grace_hours=0)
    assert report.packs_deleted == 0, "a pack holding a referenced blob is never deleted"
    assert orphan in pack_names(s3)
    assert not [k for k in s3.objects() if "/gc/condemned/" in k], "its mark is released"


def test_expired_sessions_and_superseded_generations_go(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    config = EngineConfig(retention=RetentionPolicy(max_checkpoints=2))
    expected: dict[str, dict[str, tuple[str, bool]]] = {}
    with Engine.open(a.ws, a.store, session_id="s1", config=config) as eng:
        for i in range(4):
            (a.ws / f"f{i}.txt").write_text(f"file {i} {uuid.uuid4().hex}\n")
            expected[eng.checkpoint(f"v{i}").id] = entry_hashes(a.ws, include_git=True)
    svc = a.add_remote()
    svc.push()
    with Engine.open(a.ws, a.store, session_id="s1", config=config) as eng:
        eng.gc()  # local retention rewrites the journal: the next push starts generation 2
    svc.push()
    assert generations(s3) == {1, 2}
    report = svc.gc(grace_hours=0)
    gens_after = {
        keys.parse_segment(k.removeprefix("team/proj/")) for k in s3.objects() if k.endswith(".seg")
    }
    assert len({g.gen for g in gens_after if g}) == 1, "the superseded generation is deleted"
    assert report.bytes_freed > 0
    svc.gc(grace_hours=0)
    svc.gc(grace_hours=0)
    assert restore_everything(Machine.make(tmp_path, s3, "fresh"), expected) >= 2

    expired = svc.gc(grace_hours=0, retention_days=0)
    assert expired.sessions_expired == 1
    assert not [k for k in s3.objects() if k.endswith(".seg")]


def test_gc_with_a_concurrent_writer_loses_nothing(tmp_path: Path, s3: S3Server) -> None:
    writer = Machine.make(tmp_path, s3, "writer")
    collector = Machine.make(tmp_path, s3, "collector")
    writer_svc = writer.add_remote()
    gc_svc = collector.add_remote()
    bucket = bucket_of(writer)
    orphans = {orphan_pack(bucket, f"garbage {i} {uuid.uuid4().hex}") for i in range(3)}
    expected: dict[str, dict[str, tuple[str, bool]]] = {}
    done = threading.Event()
    errors: list[BaseException] = []
    reports: list[RemoteGcReport] = []
    config = EngineConfig(retention=RetentionPolicy(max_checkpoints=5))

    def write() -> None:
        try:
            for session in ("w1", "w2"):
                with Engine.open(writer.ws, writer.store, session_id=session, config=config) as eng:
                    for i in range(8):
                        (writer.ws / f"{session}-{i % 3}.txt").write_text(
                            f"{session} {i} {uuid.uuid4().hex}\n"
                        )
                        if i % 4 == 0:
                            (writer.ws / "big.bin").write_bytes(os.urandom(20_000))
                        expected[eng.checkpoint(f"{session} {i}").id] = entry_hashes(
                            writer.ws, include_git=True
                        )
                        writer_svc.push()
                        if i == 5:
                            eng.gc()  # a new generation while the collector runs
                        time.sleep(0.2)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def collect() -> None:
        try:
            while not done.is_set():
                reports.append(gc_svc.gc(grace_hours=GRACE_S / 3600))
                time.sleep(0.3)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), threading.Thread(target=collect)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    writer_svc.push()
    # Let every condemned pack reach its grace and go: up to three rounds, fewer once the orphans
    # are gone (each round waits a whole grace period).
    for _ in range(3):
        time.sleep(GRACE_S + 0.5)
        reports.append(gc_svc.gc(grace_hours=GRACE_S / 3600))
        if sum(r.packs_deleted for r in reports) >= len(orphans) and not orphans & pack_names(s3):
            break

    assert len(reports) >= 5
    assert sum(r.packs_condemned for r in reports) >= len(orphans)
    assert sum(r.packs_deleted for r in reports) >= len(orphans)
    assert not orphans & pack_names(s3), "garbage was collected while the writer ran"
    restored = restore_everything(Machine.make(tmp_path, s3, "fresh"), expected)
    assert restored >= 8, restored


def test_a_warm_collection_downloads_no_segment_again(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    with a.engine("s1") as eng:
        for i in range(3):
            (a.ws / "f.txt").write_text(f"version {i}\n")
            eng.checkpoint(f"v{i}")
    svc = a.add_remote()
    svc.push()
    bucket = bucket_of(a)
    indexes: dict[str, bytes] = {}

    def load(name: str) -> bytes:
        if name not in indexes:
            indexes[name] = packs.open_index(bucket.get(keys.index_key(name), limit=1 << 30), name, None)
        return indexes[name]

    cache = tmp_path / "refs.json"
    cold = gc.collect(bucket, None, load_index=load, refs=gc.RefCache(cache))
    assert cold.requests["get"] >= cold.segments >= 1
    warm = gc.collect(bucket, None, load_index=load, refs=gc.RefCache(cache))
    assert warm.requests["get"] == 0 and warm.live_blobs == cold.live_blobs
    orphan = orphan_pack(bucket, "garbage " + uuid.uuid4().hex)
    after = gc.collect(bucket, None, load_index=load, refs=gc.RefCache(cache), grace_hours=0)
    assert after.packs_condemned == 1 and orphan in pack_names(s3)
