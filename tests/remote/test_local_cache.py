"""The local cache policy (``remote gc --local``) against a real S3 server: over the size cap, old
blobs the remote keeps are dropped locally and still restore (fetched lazily); the head's, the
recent past's, and anything not pushed yet stay."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import Engine
from retrace.engine.store.layout import StoreLayout
from retrace.sync.config import load_remotes, save_remotes


def set_cache(m: Machine, *, hours: float, max_bytes: int | None) -> None:
    layout = StoreLayout(m.store)
    update = {"local_cache_hours": hours, "local_cache_bytes": max_bytes}
    remotes = [r.model_copy(update=update) for r in load_remotes(layout)]
    save_remotes(layout, remotes)


def local_blob(m: Machine, text: str) -> bool:
    with Engine.open(m.ws, m.store, readonly=True) as eng:
        return eng.blobs.has_local(hashlib.sha256(text.encode()).hexdigest())


def test_old_pushed_blobs_are_dropped_and_still_restore(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    old = f"old content {uuid.uuid4().hex}\n" * 200
    head = f"head content {uuid.uuid4().hex}\n" * 200
    unpushed = f"not pushed yet {uuid.uuid4().hex}\n" * 200
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text(old)
        cp_old = eng.checkpoint("old").id
        (a.ws / "f.txt").write_text(head)
        eng.checkpoint("head")
    svc = a.add_remote()
    svc.push()
    with a.engine("s1") as eng:
        (a.ws / "g.txt").write_text(unpushed)
        eng.checkpoint("after the push")
        (a.ws / "g.txt").unlink()
        eng.checkpoint("g gone")

    set_cache(a, hours=24, max_bytes=0)
    assert svc.gc(local=True).local_blobs_dropped == 0, "everything is recent: nothing dropped"
    set_cache(a, hours=0, max_bytes=None)
    assert svc.gc(local=True).local_blobs_dropped == 0, "no size cap: nothing dropped"

    set_cache(a, hours=0, max_bytes=0)
    report = svc.gc(local=True)
    assert report.local_blobs_dropped >= 1 and report.local_bytes_freed > 0
    assert not local_blob(a, old), "an old pushed blob is dropped"
    assert local_blob(a, head), "the head's blobs stay"
    assert local_blob(a, unpushed), "a blob no pushed journal references stays"

    source = svc.blob_source()
    with Engine.open(a.ws, a.store, blob_source=source) as eng:
        assert eng.problems == []
        eng.restore(cp_old, force=True)
    assert (a.ws / "f.txt").read_text() == old
    assert local_blob(a, old), "fetched back on first use"
