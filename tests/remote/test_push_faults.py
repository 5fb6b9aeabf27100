"""Push through the fault proxy in front of a real S3 server: injected 500s and lost answers are
retried and nothing is duplicated; a remote that stays down gives one clear line (also as the
remote's ``lastError``), and the next push once it is back completes the same data."""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
from tests.oracles import entry_hashes
from tests.remote.fault_proxy import Fail as FailAction
from tests.remote.fault_proxy import FaultProxy, Request, Rule
from tests.remote.helpers import Machine
from tests.remote.s3server import SECRET_KEY, S3Server

from retrace.engine import Engine
from retrace.sync import keys, packs
from retrace.sync.errors import RemoteError
from retrace.sync.models import RemoteConfig
from retrace.sync.objects import Bucket
from retrace.sync.service import RemoteService


def via_proxy(m: Machine, proxy: FaultProxy) -> RemoteService:
    svc = m.service()
    svc.add("origin", m.s3.url(), endpoint=proxy.endpoint, workspace_name="proj")
    return svc


def make_work(m: Machine, session: str, rounds: int) -> dict[str, dict[str, tuple[str, bool]]]:
    expected: dict[str, dict[str, tuple[str, bool]]] = {}
    with m.engine(session) as eng:
        for i in range(rounds):
            (m.ws / f"file{i % 4}.txt").write_text(f"{session} round {i} {uuid.uuid4().hex}\n" * 20)
            expected[eng.checkpoint(f"round {i}").id] = entry_hashes(m.ws, include_git=True)
    return expected


def assert_no_duplicates(s3: S3Server) -> None:
    """Every blob is in exactly one pack; no journal range is uploaded twice."""
    config = RemoteConfig(name="check", url=s3.url(), endpoint=s3.endpoint, workspace_name="proj")
    bucket = Bucket(config, s3.env())
    listing = bucket.list(keys.PACKS)
    parsed = [p for o in listing if (p := keys.parse_pack(o.key))]
    names = {p[0] for p in parsed}
    assert {p[1] for p in parsed} <= {"pack", "idx"}
    blobs: Counter[str] = Counter()
    for name in names:
        blobs.update(packs.parse_index(bucket.get(keys.index_key(name), limit=1 << 30)).keys())
    assert blobs and max(blobs.values()) == 1, [b for b, n in blobs.items() if n > 1]
    ranges = Counter(
        (s.session_id, s.store_id, s.gen, s.start)
        for o in bucket.list(keys.SESSIONS)
        if (s := keys.parse_segment(o.key))
    )
    assert ranges and max(ranges.values()) == 1


def restores_on_fresh_machine(
    tmp_path: Path, s3: S3Server, session: str, expected: dict[str, dict[str, tuple[str, bool]]]
) -> None:
    fresh = Machine.make(tmp_path, s3, f"fresh-{uuid.uuid4().hex[:6]}")
    svc = fresh.add_remote()
    svc.open(session)
    with Engine.open(fresh.ws, fresh.store, blob_source=svc.blob_source()) as eng:
        for cp_id, want in expected.items():
            eng.restore(cp_id, force=True)
            assert entry_hashes(fresh.ws, include_git=True) == want


def test_push_survives_injected_500s_and_lost_answers(
    tmp_path: Path, s3: S3Server, proxy: FaultProxy
) -> None:
    a = Machine.make(tmp_path, s3, "a")
    expected = make_work(a, "s1", 6)
    svc = via_proxy(a, proxy)
    counter = itertools.count()
    lock = threading.Lock()

    def every_third(_req: Request) -> bool:
        with lock:
            return next(counter) % 3 == 0

    proxy.add(Rule(FailAction(500), method="PUT", when=every_third))
    proxy.drop(1, after_forward=True, method="PUT", path=r"\.pack")  # the server wrote, the answer is lost
    proxy.fail(2, status=503, method="GET")  # LIST and GET requests too
    report = svc.push()
    assert report.segments >= 1 and report.packs >= 1
    assert proxy.count("PUT", outcome="fail 500") >= 2
    assert proxy.count("PUT", outcome="drop-after") >= 1
    assert_no_duplicates(s3)
    assert svc.status().last_error is None
    proxy.clear()
    again = svc.push()
    assert again.up_to_date and again.packs == 0 and again.segments == 0
    restores_on_fresh_machine(tmp_path, s3, "s1", expected)


def test_remote_down_is_one_line_then_the_next_push_completes(
    tmp_path: Path, s3: S3Server, proxy: FaultProxy
) -> None:
    a = Machine.make(tmp_path, s3, "a")
    expected = make_work(a, "s1", 3)
    svc = via_proxy(a, proxy)
    svc.push()
    expected |= make_work(a, "s1", 4)
    proxy.down()
    with pytest.raises(RemoteError) as info:
        svc.push()
    message = str(info.value)
    assert "\n" not in message and "origin" in message
    assert SECRET_KEY not in message and "retrace-test-access" not in message
    status = svc.status()
    assert status.last_error is not None and "\n" not in status.last_error
    assert status.pending_checkpoints > 0 or status.pending_bytes > 0
    proxy.clear()
    report = svc.push()
    assert not report.up_to_date and report.segments >= 1
    assert svc.status().last_error is None
    assert_no_duplicates(s3)
    restores_on_fresh_machine(tmp_path, s3, "s1", expected)


def test_push_cut_between_packs_and_segments_resumes_without_duplicates(
    tmp_path: Path, s3: S3Server, proxy: FaultProxy
) -> None:
    """Every segment PUT fails past the client's retries: the packs are up, the push fails; the
    next push uploads the segments only (the packs are not built or sent again)."""
    a = Machine.make(tmp_path, s3, "a")
    expected = make_work(a, "s1", 5)
    svc = via_proxy(a, proxy)
    proxy.fail(method="PUT", path=r"\.seg")
    with pytest.raises(RemoteError):
        svc.push()
    packs_before = proxy.count("PUT", path=r"\.pack", outcome="forwarded")
    assert packs_before >= 1
    assert not [k for k in s3.objects() if k.endswith(".seg")]
    proxy.clear()
    svc.push()
    assert [k for k in s3.objects() if k.endswith(".seg")], "the staged segments went up"
    assert proxy.count("PUT", path=r"\.pack", outcome="forwarded") == packs_before
    assert_no_duplicates(s3)
    restores_on_fresh_machine(tmp_path, s3, "s1", expected)


def test_a_segment_staged_before_a_gc_deleted_its_pack_waits_for_its_blobs(
    tmp_path: Path, s3: S3Server, proxy: FaultProxy
) -> None:
    """A push cut off after its packs went up leaves its segments staged; a remote GC from another
    machine (grace 0: the cut lasted longer than the grace period) deletes the packs nothing on the
    bucket references yet. The resumed push must upload the blobs again BEFORE the staged
    segments: a segment never reaches the bucket while a blob it references is missing there."""
    a = Machine.make(tmp_path, s3, "a")
    expected = make_work(a, "s1", 4)
    svc = via_proxy(a, proxy)
    proxy.fail(method="PUT", path=r"\.seg")
    with pytest.raises(RemoteError):
        svc.push()
    proxy.clear()
    gc_machine = Machine.make(tmp_path, s3, "gc")
    gc_svc = gc_machine.add_remote()
    gc_svc.gc(grace_hours=0)
    assert gc_svc.gc(grace_hours=0).packs_deleted >= 1
    assert not [k for k in s3.objects() if k.endswith(".pack")], "the GC deleted the unreferenced packs"

    # The resumed push may not publish a segment while the packs cannot be uploaded.
    proxy.fail(method="PUT", path=r"\.pack")
    with pytest.raises(RemoteError):
        svc.push()
    assert not [k for k in s3.objects() if k.endswith(".seg")], "a segment went up before its blobs"
    proxy.clear()
    svc.push()
    assert [k for k in s3.objects() if k.endswith(".seg")]
    assert_no_duplicates(s3)
    restores_on_fresh_machine(tmp_path, s3, "s1", expected)
