"""Push from one machine, open and restore on another: byte-exact, lazily fetched."""

from __future__ import annotations

import os
from pathlib import Path

from tests.oracles import entry_hashes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import Engine
from retrace.sync.fetch import RemoteBlobs


def write_work(ws: Path, version: int) -> None:
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "main.py").write_text(f"print('version {version}')\n")
    (ws / "data.bin").write_bytes(bytes(range(256)) * (40 + version) + b"\x00\xff")
    tool = ws / "run.sh"
    tool.write_text(f"#!/bin/sh\necho {version}\n")
    tool.chmod(0o755)


def test_push_open_restore_is_byte_exact_and_lazy(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    write_work(a.ws, 1)
    with a.engine("sess-1") as eng:
        cp1 = eng.checkpoint("one").id
        write_work(a.ws, 2)
        (a.ws / "gone.txt").write_text("deleted later\n")
        cp2 = eng.checkpoint("two").id
    expected = {2: entry_hashes(a.ws, include_git=True)}
    svc_a = a.add_remote()
    report = svc_a.push()
    assert report.segments >= 1 and report.packs >= 1 and not report.up_to_date
    assert svc_a.sessions()[0].opened_locally, "the machine that pushed a session holds it"

    b = Machine.make(tmp_path, s3, "b")
    svc_b = b.add_remote()
    listed = svc_b.sessions()
    assert [s.session_id for s in listed] == ["sess-1"]
    assert listed[0].workspace_name == "proj" and not listed[0].opened_locally
    opened = svc_b.open("sess-1")
    assert opened.checkpoints >= 2
    assert svc_b.sessions()[0].opened_locally

    # Opening downloaded the timeline only: no blob is stored on B yet.
    assert not [p for p in (b.store / "blobs").rglob("*") if p.is_file()]
    source = svc_b.blob_source()
    assert isinstance(source, RemoteBlobs)
    assert source.fetched == 0
    with Engine.open(b.ws, b.store, blob_source=source) as eng:
        assert {cp1, cp2} <= {c.id for c in eng.timeline("sess-1")}
        assert eng.problems == []
        eng.restore(cp2, force=True)
        assert entry_hashes(b.ws, include_git=True) == expected[2]
        assert 0 < source.fetched <= len(source.ids())
        eng.restore(cp1, force=True)
        assert (b.ws / "src" / "main.py").read_text() == "print('version 1')\n"
        assert os.access(b.ws / "run.sh", os.X_OK)


def test_opening_a_later_session_brings_the_sessions_it_builds_on(tmp_path: Path, s3: S3Server) -> None:
    """A session's first checkpoint has its parent in an earlier session of that store (the
    baseline): opening the later session alone must still give restorable checkpoints."""
    a = Machine.make(tmp_path, s3, "a")
    write_work(a.ws, 1)
    with a.engine("first") as eng:
        eng.checkpoint("one")
    with a.engine("second") as eng:
        write_work(a.ws, 2)
        cp = eng.checkpoint("two").id
    expected = entry_hashes(a.ws, include_git=True)
    a.add_remote().push()

    b = Machine.make(tmp_path, s3, "b")
    b.add_remote().open("second")
    with b.engine(remote=True) as eng:
        assert eng.problems == []
        eng.restore(cp, force=True)
    assert entry_hashes(b.ws, include_git=True) == expected


def test_an_encrypted_remote_hides_the_store_card(tmp_path: Path, s3: S3Server) -> None:
    import base64
    import socket

    key = base64.b64encode(os.urandom(32)).decode()
    a = Machine.make(tmp_path, s3, "a")
    write_work(a.ws, 1)
    with a.engine("s1") as eng:
        eng.checkpoint("one")
    a.add_remote(encrypt=True, RETRACE_REMOTE_KEY=key).push()
    cards = [p for p in (s3.data / s3.bucket).rglob("stores/*.json")]
    assert len(cards) == 1
    raw = cards[0].read_bytes()
    assert str(a.ws).encode() not in raw and socket.gethostname().encode() not in raw
    b = Machine.make(tmp_path, s3, "b")
    listed = b.add_remote(encrypt=True, RETRACE_REMOTE_KEY=key).sessions()
    assert [(s.machine, s.workspace_path) for s in listed] == [(socket.gethostname(), str(a.ws))]
