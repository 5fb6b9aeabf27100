"""Push against a real S3 server: idempotent, resumable after the server dies mid-upload,
cancellable, new generation after a local gc, two machines at once, pull."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from tests.oracles import entry_hashes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import Engine, EngineConfig
from retrace.engine.config import RetentionPolicy
from retrace.sync import RemoteError, SyncProgress
from retrace.sync.fetch import remote_journals
from retrace.sync.keys import parse_pack, parse_segment
from retrace.sync.objects import Bucket
from retrace.sync.packs import parse_index

pytestmark = pytest.mark.slow


def work(m: Machine, session: str, n: int, *, size: int = 3000) -> list[str]:
    """``n`` checkpoints, each writing a fresh binary file and editing a text file."""
    ids = []
    with m.engine(session) as eng:
        for i in range(n):
            (m.ws / f"f{session}-{i}.bin").write_bytes(os.urandom(size))
            (m.ws / "log.txt").write_text(f"{session} step {i}\n")
            ids.append(eng.checkpoint(f"step {i}").id)
    return ids


def bucket_of(m: Machine) -> Bucket:
    svc = m.service()
    return Bucket(svc.remotes()[0], svc.env)


def pack_contents(bucket: Bucket) -> dict[str, set[str]]:
    """pack name → blob ids (read from the remote indexes)."""
    out: dict[str, set[str]] = {}
    for o in bucket.list("packs/"):
        p = parse_pack(o.key)
        if p and p[1] == "idx":
            out[p[0]] = set(parse_index(bucket.get(o.key, limit=1 << 30)))
    return out


def assert_no_duplicates(m: Machine, *, blobs: bool = True) -> None:
    """No journal range twice, every pack with its index; ``blobs``: no blob in two packs (one
    writer; two machines racing may both upload a blob they share: harmless, no lock needed)."""
    bucket = bucket_of(m)
    packs = pack_contents(bucket)
    names = {parse_pack(o.key)[0] for o in bucket.list("packs/") if parse_pack(o.key)}  # type: ignore[index]
    assert names == set(packs), "a pack without its index (or the reverse)"
    seen: list[str] = [b for ids in packs.values() for b in ids]
    assert not blobs or len(seen) == len(set(seen)), "a blob uploaded twice"
    ranges = [
        (s.session_id, s.store_id, s.gen, s.start)
        for o in bucket.list("sessions/")
        if (s := parse_segment(o.key))
    ]
    assert len(ranges) == len(set(ranges)), "a journal range uploaded twice"


def local_blobs(m: Machine) -> set[str]:
    from retrace.engine.store.blobs import BlobStore

    return set(BlobStore(m.store / "blobs").local_ids())


def test_second_push_uploads_nothing(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 3)
    svc = a.add_remote()
    first = svc.push()
    assert first.blobs == len(local_blobs(a)) and first.segments == 1
    before = s3.objects()
    second = svc.push()
    assert second.up_to_date and second.packs == second.blobs == second.segments == second.bytes == 0
    assert s3.objects() == before
    work(a, "s1", 1)
    third = svc.push()
    assert third.segments == 1 and third.blobs >= 1
    assert_no_duplicates(a)


def test_server_killed_mid_upload_then_push_resumes(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retrace.sync.push.MAX_PACK_BYTES", 4000)  # one pack per blob or so
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 12)
    svc = a.add_remote()
    seen: list[SyncProgress] = []

    def kill_after_two(p: SyncProgress) -> None:
        seen.append(p)
        if p.phase == "blobs" and p.done == 2:
            s3.stop()

    with pytest.raises(RemoteError) as err:
        svc.push(progress=kill_after_two)
    assert "\n" not in str(err.value) and "secret" not in str(err.value).lower()
    status = svc.status()
    assert status.last_error and status.pending_checkpoints > 0

    s3.start()
    resumed = svc.push()
    assert not resumed.up_to_date
    assert svc.status().outbox == 0 and svc.status().pending_checkpoints == 0
    assert_no_duplicates(a)
    remote_ids = set().union(*pack_contents(bucket_of(a)).values())
    assert local_blobs(a) <= remote_ids
    assert svc.push().up_to_date

    b = Machine.make(tmp_path, s3, "b")
    b.add_remote().open("s1")
    with b.engine(remote=True) as eng:
        last = eng.timeline("s1")[-1].id
        eng.restore(last, force=True)
    assert entry_hashes(b.ws, include_git=True) == entry_hashes(a.ws, include_git=True)


def test_cancel_stops_between_objects_and_the_next_push_finishes(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retrace.sync.push.MAX_PACK_BYTES", 4000)
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 8)
    svc = a.add_remote()
    stop = threading.Event()
    partial = svc.push(
        progress=lambda p: stop.set() if p.phase == "blobs" and p.done >= 1 else None, cancel=stop
    )
    assert not partial.up_to_date
    rest = svc.push()
    assert rest.segments == 1
    assert_no_duplicates(a)
    assert svc.push().up_to_date


def test_local_gc_rewriting_a_journal_starts_a_new_generation(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 5)
    svc = a.add_remote()
    svc.push()
    config = EngineConfig(retention=RetentionPolicy(max_checkpoints=3))
    with Engine.open(a.ws, a.store, session_id="s1", config=config) as eng:
        eng.gc()
        kept = [c.id for c in eng.timeline("s1")]
    report = svc.push()
    assert report.segments == 1
    journals = remote_journals(bucket_of(a), "s1")
    assert [j.gen for j in journals] == [2]

    b = Machine.make(tmp_path, s3, "b")
    svc_b = b.add_remote()
    assert svc_b.sessions()[0].generation == 2
    svc_b.open("s1")
    with b.engine(remote=True) as eng:
        assert [c.id for c in eng.timeline("s1")] == kept
        eng.restore(kept[-1], force=True)
        assert (b.ws / "log.txt").read_text() == "s1 step 4\n"


def test_two_machines_push_concurrently_and_restore_each_other(tmp_path: Path, s3: S3Server) -> None:
    a, b = Machine.make(tmp_path, s3, "a"), Machine.make(tmp_path, s3, "b")
    svc_a, svc_b = a.add_remote(), b.add_remote()
    ids: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def writer(m: Machine, svc: object, session: str) -> None:
        try:
            for _round in range(3):
                ids.setdefault(session, []).extend(work(m, session, 2))
                svc.push()  # type: ignore[attr-defined]
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(a, svc_a, "from-a")),
        threading.Thread(target=writer, args=(b, svc_b, "from-b")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    listed = {s.session_id for s in svc_a.sessions()}
    assert listed == {"from-a", "from-b"}
    assert_no_duplicates(a, blobs=False)

    # Each opens the other's session and restores its checkpoints byte-exact.
    expected_a, expected_b = entry_hashes(a.ws, include_git=True), entry_hashes(b.ws, include_git=True)
    svc_a.open("from-b")
    svc_b.open("from-a")
    with a.engine(remote=True) as eng:
        assert set(ids["from-b"]) <= {c.id for c in eng.timeline("from-b")}
        eng.restore(ids["from-b"][-1], force=True)
    assert entry_hashes(a.ws, include_git=True) == expected_b
    with b.engine(remote=True) as eng:
        eng.restore(ids["from-a"][-1], force=True)
    assert entry_hashes(b.ws, include_git=True) == expected_a


def test_pull_appends_what_was_pushed_since(tmp_path: Path, s3: S3Server) -> None:
    a, b = Machine.make(tmp_path, s3, "a"), Machine.make(tmp_path, s3, "b")
    work(a, "s1", 2)
    svc_a = a.add_remote()
    svc_a.push()
    svc_b = b.add_remote()
    svc_b.open("s1")
    with b.engine(remote=True) as eng:
        before = len(eng.timeline("s1"))
        more = work(a, "s1", 2)
        svc_a.push()
        pulled = svc_b.pull()
        assert pulled.sessions == 1 and pulled.segments == 1
        added = eng.adopt_sessions(svc_b.blob_source())
        assert set(more) <= set(added)
        assert len(eng.timeline("s1")) == before + 2
        eng.restore(more[-1], force=True)
    assert svc_b.pull().sessions == 0


def test_open_refuses_to_replace_a_local_session(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 1)
    a.add_remote().push()
    b = Machine.make(tmp_path, s3, "b")
    work(b, "s1", 1)
    with pytest.raises(RemoteError, match="already exists in this store"):
        b.add_remote().open("s1")


def test_an_opened_session_is_pushed_back_only_once_continued(tmp_path: Path, s3: S3Server) -> None:
    a, b = Machine.make(tmp_path, s3, "a"), Machine.make(tmp_path, s3, "b")
    work(a, "s1", 2)
    a.add_remote().push()
    svc_b = b.add_remote()
    svc_b.open("s1")
    assert svc_b.status().pending_checkpoints == 0
    before = s3.objects()
    report = svc_b.push()
    assert report.segments == 0
    assert {k for k in s3.objects() if "/sessions/" in k} == {k for k in before if "/sessions/" in k}

    with b.engine("s1", remote=True) as eng:  # continue the session on B
        eng.restore(eng.timeline("s1")[-1].id, force=True)
        (b.ws / "from-b.txt").write_text("continued on b\n")
        cont = eng.checkpoint("on b").id
    assert svc_b.status().pending_checkpoints >= 1
    assert svc_b.push().segments >= 1
    stores = {s.store_id for s in svc_b.sessions() if s.session_id == "s1"}
    assert len(stores) == 2  # A's journal and B's full continuation, side by side

    c = Machine.make(tmp_path, s3, "c")
    svc_c = c.add_remote()
    svc_c.open("s1")  # the newest: B's
    with c.engine(remote=True) as eng:
        eng.restore(cont, force=True)
    assert (c.ws / "from-b.txt").read_text() == "continued on b\n"


def test_pointing_a_remote_elsewhere_forgets_what_was_pushed_to_the_old_place(
    tmp_path: Path, s3: S3Server
) -> None:
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 2)
    svc = a.add_remote()
    svc.push()
    svc.add("origin", s3.url("elsewhere"), endpoint=s3.endpoint)  # keeps the workspace name
    assert svc.remotes()[0].workspace_name == "proj"
    assert svc.status().pending_checkpoints >= 2
    report = svc.push()
    assert report.segments == 1 and report.blobs == len(local_blobs(a))
    assert any(k.startswith("elsewhere/proj/sessions/") for k in s3.objects())


def test_one_push_at_a_time_per_store(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 2)
    svc = a.add_remote()
    refused: list[str] = []

    def second_push(p: SyncProgress) -> None:
        if not refused:
            with pytest.raises(RemoteError) as err:
                a.service().push()  # e.g. the CLI while the editor's server pushes
            refused.append(str(err.value))

    svc.push(progress=second_push)
    assert refused == ["a push to remote 'origin' is already running"]
    assert svc.push().up_to_date  # the lock was released


def test_status_while_a_push_empties_the_outbox(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``status`` lists the outbox, then sizes each item; a push running beside it (the server's
    push scheduler) may upload and remove an item in between. Status counts what is still there
    and never fails on what went (found by the multi-root server test: an internal error)."""
    monkeypatch.setattr("retrace.sync.push.MAX_PACK_BYTES", 4000)
    a = Machine.make(tmp_path, s3, "a")
    work(a, "s1", 6)
    svc = a.add_remote()

    def stop_after_one(p: SyncProgress) -> None:
        if p.phase == "blobs" and p.done == 1:
            s3.stop()

    with pytest.raises(RemoteError):
        svc.push(progress=stop_after_one)
    from retrace.sync.state import SyncPaths

    listed = SyncPaths.outbox_items

    def listed_then_one_pushed(self: SyncPaths) -> list[Path]:
        items = listed(self)
        items[0].unlink()  # uploaded and removed by a push after the listing
        return items

    before = len(
        [p for p in (a.store / "remote" / "origin" / "outbox").iterdir() if not p.name.startswith(".")]
    )
    assert before >= 2, "the stopped push left several items in the outbox"
    monkeypatch.setattr(SyncPaths, "outbox_items", listed_then_one_pushed)
    status = svc.status()
    assert status.outbox == before - 1
    assert status.pending_bytes > 0
