"""A bucket is untrusted input (sizes): an object bigger than its kind may be — a segment, a store
card, a pack index — is refused with a clear error before its body is read, through the real
``retrace`` CLI against the real S3 server; the CLI's peak memory stays bounded and nothing of
the object reaches the local store.

The 1 GiB objects are sparse files in the S3 server's data folder (no disk used); the CLI runs
under a small wrapper that reports its peak RSS (``getrusage(RUSAGE_CHILDREN)``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server, serving
from tests.remote.test_cli_remote import base_env

from retrace.sync import limits
from retrace.sync.errors import RemoteError
from retrace.sync.keys import SegmentKey
from retrace.sync.objects import Bucket

GIB = 1 << 30
BIG = 256 << 20
"""Objects the client must GET to learn their size (smaller than the 1 GiB segments, which a LIST
already gives away)."""
PEAK_LIMIT = 200 << 20
"""What the CLI may peak at while refusing a 1 GiB object (it used over 2 GiB before)."""

_WRAPPER = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stdout.write(p.stdout)\n"
    "sys.stderr.write(p.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)\n"
    "sys.exit(p.returncode)\n"
)


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    """The remote tests' S3 server without ETags: rclone would hash each of these 1 GiB objects
    whole to answer a LIST of it (~6 CPU-seconds each, most of this file's CPU); nothing here
    reads an ETag."""
    with serving(tmp_path / "s3data", etag_hash="") as server:
        yield server


def measured(args: list[str], env: dict[str, str]) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr without the last line, peak RSS in bytes) of ``retrace args``."""
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "retrace", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    *err, peak = proc.stderr.rstrip("\n").split("\n")
    return proc.returncode, proc.stdout, "\n".join(err), int(peak)


def sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)


def store_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())


def prefix(s3: S3Server) -> Path:
    return s3.data / s3.bucket / "team" / "proj"


def cli_machine(tmp_path: Path, s3: S3Server) -> tuple[list[str], dict[str, str], Path]:
    env = base_env(tmp_path, s3)
    ws, store = tmp_path / "b" / "proj", tmp_path / "b" / "store"
    ws.mkdir(parents=True)
    where = ["--workspace", str(ws), "--store", str(store)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "retrace",
            "remote",
            "add",
            "origin",
            s3.url(),
            *("--endpoint", s3.endpoint),
            *where,
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return where, env, store


@pytest.mark.parametrize(
    ("claimed", "says"),
    [
        (100, "is 1073741824 bytes in the bucket, its name says 100 bytes"),  # the name lies about the size
        (GIB, f"more than the {limits.SEGMENT_BYTES} a segment may hold"),  # the name says 1 GiB
    ],
)
def test_a_1_gib_object_posing_as_a_segment_is_refused_in_bounded_memory(
    tmp_path: Path, s3: S3Server, claimed: int, says: str
) -> None:
    where, env, store = cli_machine(tmp_path, s3)
    seg = SegmentKey("big", "s0123456789abcdef", 1, 0, 0, claimed, 1_700_000_000_000)
    sparse(prefix(s3) / seg.key, GIB)
    code, _out, err, peak = measured(["remote", "open", "big", *where], env)
    assert code == 2 and says in err and err.count("\n") == 0, err
    assert peak < PEAK_LIMIT, peak
    assert not (store / "sessions" / "big").exists()
    assert store_bytes(store) < 1 << 20


def test_an_oversized_store_card_and_pack_index_are_refused(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text("one\n")
        eng.checkpoint("one")
    a.add_remote().push()
    (card,) = (prefix(s3) / "stores").iterdir()
    sparse(card, BIG)
    sparse(prefix(s3) / "packs" / f"{'e' * 64}.idx", BIG)
    s3.restart()  # the server caches folder listings: it sees the new objects from a fresh start
    where, env, store = cli_machine(tmp_path, s3)
    code, out, err, peak = measured(["remote", "sessions", "--json", *where], env)
    assert code == 0, err
    assert [s["sessionId"] for s in json.loads(out)] == ["s1"] and json.loads(out)[0]["machine"] == ""
    assert peak < PEAK_LIMIT, peak
    code, out, err, peak = measured(["remote", "open", "s1", *where], env)
    assert code == 4 and f"pack index team/proj/packs/{'e' * 64}.idx is {BIG} bytes" in err, err
    assert peak < PEAK_LIMIT, peak
    assert (store / "sessions" / "s1" / "journal.jsonl").exists()
    assert store_bytes(store) < 1 << 20


def test_get_refuses_an_object_over_its_limit_before_reading_it(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    config = a.add_remote().remotes()[0]
    bucket = Bucket(config, {**s3.env()})
    sparse(prefix(s3) / "some" / "object", BIG)
    (prefix(s3) / "some" / "small").write_bytes(os.urandom(3 << 20))
    with pytest.raises(RemoteError, match=rf"store card .* is {BIG} bytes, more than the 65536"):
        bucket.get("some/object", limit=limits.CARD_BYTES, kind="store card")
    assert len(bucket.get("some/small", limit=3 << 20)) == 3 << 20  # exactly at the limit: read
    with pytest.raises(RemoteError, match="more than"):
        bucket.get("some/small", limit=(3 << 20) - 1)


def test_a_push_goes_on_past_a_foreign_index_that_fails_its_checks(tmp_path: Path, s3: S3Server) -> None:
    a = Machine.make(tmp_path, s3, "a")
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text("one\n")
        eng.checkpoint("one")
    svc = a.add_remote()
    svc.push()
    sparse(prefix(s3) / "packs" / f"{'e' * 64}.idx", BIG)
    (prefix(s3) / "packs" / f"{'d' * 64}.idx").write_bytes(b"7 bytes")
    s3.restart()  # the server caches folder listings: it sees the new objects from a fresh start
    with a.engine("s1") as eng:
        (a.ws / "f.txt").write_text("two\n")
        eng.checkpoint("two")
    report = svc.push()
    assert report.segments == 1 and report.packs == 1
    cached = {p.stem for p in (a.store / "remote" / "origin" / "index").glob("*.idx")}
    assert "e" * 64 not in cached and "d" * 64 not in cached


class _Lying:
    """A GET result whose size says 10 bytes and whose body never ends (counts what was read)."""

    def __init__(self) -> None:
        self.meta = {"size": 10}
        self.read = 0

    def stream(self, min_chunk_size: int) -> Iterator[bytes]:
        while True:
            self.read += min_chunk_size
            yield b"\0" * min_chunk_size


def test_a_body_longer_than_announced_is_cut_off_at_the_limit(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Machine.make(tmp_path, s3, "a").add_remote().remotes()[0]
    bucket = Bucket(config, {**s3.env()})
    lying = _Lying()
    monkeypatch.setattr("retrace.sync.objects.obstore.get", lambda _store, _key: lying)
    with pytest.raises(RemoteError, match="more than the 4194304 a segment may hold"):
        bucket.get("k", limit=4 << 20, kind="segment")
    assert lying.read <= (4 << 20) + (1 << 20)
