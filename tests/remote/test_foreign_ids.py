"""A session opened from another machine through a real bucket never moves the local head, the
next checkpoint's parent or the local ids (issue 25, item 5), whether it is adopted by a running
engine or read on the next open, and whatever the other machine's clock said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.oracles import entry_hashes
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server

from retrace.engine import clock


def _pushed_session(
    tmp_path: Path, s3: S3Server, sid: str, steps: int = 2
) -> tuple[list[str], dict[str, tuple[str, bool]]]:
    a = Machine.make(tmp_path, s3, "a")
    with a.engine(sid) as eng:
        for i in range(steps):
            (a.ws / "shared.txt").write_text(f"from machine a, step {i}\n")
            eng.checkpoint(f"a {i}")
        ids = [c.id for c in eng.timeline(sid)]
    a.add_remote().push()
    return ids, entry_hashes(a.ws, include_git=True)


def _local_work(b: Machine, n: int) -> list[str]:
    out = []
    with b.engine("b-session") as eng:
        for i in range(n):
            (b.ws / "shared.txt").write_text(f"machine b's own work {i}\n")
            out.append(eng.checkpoint(f"b {i}").id)
    return out


def test_opening_a_newer_session_keeps_the_local_head_on_the_next_open(tmp_path: Path, s3: S3Server) -> None:
    b = Machine.make(tmp_path, s3, "b")
    mine = _local_work(b, 2)
    theirs, their_tree = _pushed_session(tmp_path, s3, "from-a")  # made after ours: newer ids
    svc = b.add_remote()
    svc.open("from-a")
    with b.engine(remote=True) as eng:
        assert eng.head.id == mine[-1]
        assert eng.unrecorded_changes() == {}
        nxt = eng.checkpoint("b continues")
        assert nxt.parent == mine[-1]
        assert set(theirs) <= {c.id for c in eng.timeline()}
        eng.restore(theirs[-1], force=True)  # their work is one restore away
        assert entry_hashes(b.ws, include_git=True) == their_tree
        assert eng.head.parent == nxt.id and eng.head.kind == "restore"


def test_a_running_engine_adopts_an_opened_session_without_moving_its_head(
    tmp_path: Path, s3: S3Server
) -> None:
    b = Machine.make(tmp_path, s3, "b")
    mine = _local_work(b, 1)
    theirs, _ = _pushed_session(tmp_path, s3, "from-a")
    svc = b.add_remote()
    with b.engine(remote=True) as eng:
        svc.open("from-a")
        added = eng.adopt_sessions(blob_source=svc.blob_source())
        assert set(added) == set(theirs)
        assert eng.head.id == mine[-1]
        cp = eng.checkpoint("after adopting")
        assert cp.parent == mine[-1] and cp.id not in theirs
    with b.engine(remote=True) as eng:
        assert eng.head.id == cp.id


def test_a_session_from_a_machine_whose_clock_is_decades_ahead(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its ids are at the top of the id range: local ids neither wrap nor follow them."""
    b = Machine.make(tmp_path, s3, "b")
    mine = _local_work(b, 1)
    far = datetime.now(UTC) + timedelta(days=365 * 60)
    monkeypatch.setattr(clock, "now", lambda: far)
    theirs, _ = _pushed_session(tmp_path, s3, "from-the-future", steps=3)
    monkeypatch.undo()
    b.add_remote().open("from-the-future")
    with b.engine("b-session", remote=True) as eng:
        assert eng.head.id == mine[-1]
        made = []
        for i in range(3):
            (b.ws / "shared.txt").write_text(f"b again {i}\n")
            made.append(eng.checkpoint(f"b again {i}").id)
        assert not set(made) & set(theirs)
    with b.engine(remote=True) as eng:
        assert eng.head.id == made[-1]
        assert all(eng.get(c).damage is None for c in [*mine, *made])
        assert [c.id for c in eng.timeline("b-session")][-3:] == made
        eng.restore(made[0], force=True)
        assert (b.ws / "shared.txt").read_text() == "b again 0\n"
