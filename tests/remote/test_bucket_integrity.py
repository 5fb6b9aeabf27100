"""A bucket is untrusted input (integrity): a sealed segment or store card whose bytes changed —
one flipped bit that keeps the JSON valid, a cut, an object moved from another key — is refused
by ``remote open`` and ``remote pull`` with a clear error, nothing of it reaches the store, and
the damage stays with its session. Pack objects are checked against their content hash.

The real S3 server's objects are files under its data folder, so the tests damage them there,
as a bit rot or a careless teammate's script would."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server
from tests.remote.test_cli_remote import base_env

from retrace.sync import packs
from retrace.sync.errors import RemoteError
from retrace.sync.fetch import RemoteBlobs


def objects(s3: S3Server, under: str) -> list[Path]:
    root = s3.data / s3.bucket / "team" / "proj" / under
    return sorted(p for p in root.rglob("*") if p.is_file())


def pushed(tmp_path: Path, s3: S3Server, sessions: tuple[str, ...] = ("s1",)) -> Machine:
    a = Machine.make(tmp_path, s3, "a")
    for sid in sessions:
        with a.engine(sid) as eng:
            (a.ws / "notes.txt").write_text(f"notes of {sid}\n")
            eng.checkpoint(f"{sid} one")
            (a.ws / "notes.txt").write_text(f"more notes of {sid}\n")
            eng.checkpoint(f"{sid} two")
    a.add_remote().push()
    return a


def flip(path: Path, bit: int) -> bytes:
    data = path.read_bytes()
    damaged = bytearray(data)
    damaged[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(damaged))
    return data


def nothing_opened(m: Machine, sid: str) -> bool:
    return not (m.store / "sessions" / sid / "journal.jsonl").exists()


def test_a_bit_flip_that_keeps_the_json_valid_is_refused(tmp_path: Path, s3: S3Server) -> None:
    pushed(tmp_path, s3)
    (seg,) = objects(s3, "sessions")
    data = seg.read_bytes()
    at = data.index(b"notes.txt") + len("notes.t")  # notes.txt → notes.tyt: one bit, valid JSON
    b = Machine.make(tmp_path, s3, "b")
    svc = b.add_remote()
    flip(seg, at * 8)
    with pytest.raises(RemoteError, match=r"is damaged: its \d+ bytes do not match its seal") as err:
        svc.open("s1")
    assert "sessions/s1/" in str(err.value) and "\n" not in str(err.value)
    assert nothing_opened(b, "s1")
    seg.write_bytes(data)
    assert svc.open("s1").checkpoints >= 2


def test_every_sampled_bit_flip_cut_and_move_is_refused(tmp_path: Path, s3: S3Server) -> None:
    """Random single-bit flips anywhere in the object (seal line included), truncations, and the
    object of another session moved under this key: each refused, nothing imported."""
    pushed(tmp_path, s3, ("s1", "s2"))
    first, second = objects(s3, "sessions/s1")[0], objects(s3, "sessions/s2")[0]
    original = first.read_bytes()
    b = Machine.make(tmp_path, s3, "b")
    svc = b.add_remote()
    rng = random.Random(25)
    bits = [rng.randrange(len(original) * 8) for _ in range(24)] + [0, 7, 8 * (packs.SEAL_BYTES - 1)]
    for bit in bits:
        flip(first, bit)
        with pytest.raises(RemoteError, match=r"damaged|bytes in the bucket|not read"):
            svc.open("s1")
        assert nothing_opened(b, "s1"), bit
        first.write_bytes(original)
    for cut in (1, len(original) // 2, len(original) - 1):
        first.write_bytes(original[:cut])
        with pytest.raises(RemoteError):
            svc.open("s1")
        assert nothing_opened(b, "s1")
    first.write_bytes(second.read_bytes())
    with pytest.raises(RemoteError):
        svc.open("s1")
    assert nothing_opened(b, "s1")
    first.write_bytes(original)
    assert svc.open("s1").checkpoints >= 2
    assert svc.open("s2").checkpoints >= 2


def test_damage_stays_with_its_session_on_pull(tmp_path: Path, s3: S3Server) -> None:
    a = pushed(tmp_path, s3, ("s1", "s2"))
    b = Machine.make(tmp_path, s3, "b")
    svc = b.add_remote()
    svc.open("s1")
    svc.open("s2")
    sizes = {sid: (b.store / "sessions" / sid / "journal.jsonl").stat().st_size for sid in ("s1", "s2")}
    for sid in ("s1", "s2"):
        with a.engine(sid) as eng:
            (a.ws / "notes.txt").write_text(f"third of {sid}\n")
            eng.checkpoint(f"{sid} three")
    a.service().push()
    newest = max(objects(s3, "sessions/s1"), key=lambda p: int(p.name.split("-")[1]))
    flip(newest, 8 * (len(newest.read_bytes()) - 3))
    report = svc.pull()
    assert report.sessions == 1 and len(report.skipped) == 1 and "sessions/s1/" in report.skipped[0]
    assert (b.store / "sessions" / "s1" / "journal.jsonl").stat().st_size == sizes["s1"]
    assert (b.store / "sessions" / "s2" / "journal.jsonl").stat().st_size > sizes["s2"]


def test_a_segment_pushed_by_0_1_0_without_a_seal_still_opens(tmp_path: Path, s3: S3Server) -> None:
    pushed(tmp_path, s3)
    (seg,) = objects(s3, "sessions")
    body = seg.read_bytes()[packs.SEAL_BYTES :]
    assert body.startswith(b"{")
    seg.write_bytes(body)
    b = Machine.make(tmp_path, s3, "b")
    assert b.add_remote().open("s1").checkpoints >= 2


@settings(max_examples=300, deadline=None)
@given(body=st.binary(min_size=1, max_size=300), data=st.data())
def test_no_single_bit_flip_of_a_sealed_object_opens(body: bytes, data: st.DataObject) -> None:
    key = "sessions/s/st/g0001/00000000-0-1-2.seg"
    sealed = packs.seal_segment(body, key, None)
    assert packs.open_segment(sealed, key, None) == body
    bit = data.draw(st.integers(0, len(sealed) * 8 - 1))
    damaged = bytearray(sealed)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(RemoteError):
        packs.open_segment(bytes(damaged), key, None)
    with pytest.raises(RemoteError):
        packs.open_segment(sealed, key.replace("g0001", "g0002"), None)  # moved to another key


class _Packs:
    """What RemoteBlobs uses of a bucket, serving packs from a dict."""

    ranges = True

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects

    def get(self, key: str, *, limit: int, kind: str = "object") -> bytes:
        return self.objects[key]

    def get_range(self, key: str, start: int, end: int, *, limit: int = 0) -> bytes:
        return self.objects[key][start:end]


def test_a_pack_that_does_not_match_its_name_is_not_used(tmp_path: Path) -> None:
    entries = [(f"{i:064x}", bytes([i]) * 50, 50) for i in range(3)]
    first, second = packs.build_pack(entries[:2], None), packs.build_pack(entries, None)
    (tmp_path / "index").mkdir()
    for built in (first, second):
        (tmp_path / "index" / f"{built.name}.idx").write_bytes(built.plain_index)
    bad = bytearray(first.data)
    bad[-1] ^= 1  # the last entry's bytes changed: the pack's hash no longer matches its name
    objects = {f"packs/{first.name}.pack": bytes(bad), f"packs/{second.name}.pack": second.data}
    source = RemoteBlobs(tmp_path / "index", lambda: _Packs(objects), None)  # type: ignore[arg-type,return-value]
    for bid, payload, _ in entries:
        assert source.fetch(bid) == payload  # the damaged pack is refused, the other copy serves
    (tmp_path / "index" / f"{second.name}.idx").unlink()
    alone = RemoteBlobs(tmp_path / "index", lambda: _Packs(objects), None)  # type: ignore[arg-type,return-value]
    with pytest.raises(RemoteError, match="does not match its name"):
        alone.fetch(entries[0][0])


def test_an_index_naming_bytes_beyond_its_pack_is_not_cached(tmp_path: Path, s3: S3Server) -> None:
    pushed(tmp_path, s3)
    (idx,) = [p for p in objects(s3, "packs") if p.suffix == ".idx"]
    plain = idx.read_bytes()
    h, off, ln, size = packs.IDX.unpack(plain[: packs.IDX.size])
    idx.write_bytes(packs.IDX.pack(h, off, ln + (1 << 30), size) + plain[packs.IDX.size :])
    b = Machine.make(tmp_path, s3, "b")
    report = b.add_remote().open("s1")
    assert len(report.skipped) == 1 and "names bytes" in report.skipped[0]
    assert not list((b.store / "remote" / "origin" / "index").glob("*.idx"))


def test_remote_verify_names_every_damaged_object(tmp_path: Path, s3: S3Server) -> None:
    """``retrace remote verify`` through the real CLI: clean, then a flipped bit in one segment
    and in one pack (with ``--packs``) are each named; exit 4; nothing else is reported."""
    a = pushed(tmp_path, s3, ("s1", "s2"))
    env = base_env(tmp_path, s3)
    where = ["--workspace", str(a.ws), "--store", str(a.store)]

    def verify(*extra: str) -> tuple[int, dict[str, object], str]:
        proc = subprocess.run(
            [sys.executable, "-m", "retrace", "remote", "verify", "--json", *extra, *where],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        return proc.returncode, json.loads(proc.stdout), proc.stderr

    code, report, _ = verify("--packs")
    assert code == 0 and report["damaged"] == [] and report["segments"] == 2 and report["unsealed"] == 0
    seg = objects(s3, "sessions/s2")[0]
    flip(seg, 8 * (len(seg.read_bytes()) - 5))
    (pack,) = [p for p in objects(s3, "packs") if p.suffix == ".pack"]
    flip(pack, 3)
    code, report, err = verify()
    assert code == 4 and len(report["damaged"]) == 1 and "sessions/s2/" in err  # type: ignore[arg-type]
    code, report, err = verify("--packs")
    assert code == 4 and len(report["damaged"]) == 2 and pack.name in err  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("card", "machine"),
    [
        (b'{"machine": "ok\\u001b[2K\\rfake line\\n", "workspaceName": 5}', "ok[2Kfake line"),
        (b"[1, 2]", ""),
        (b'"just a string"', ""),
        (b'{"machine": "' + b"m" * 5000 + b'"}', "m" * 256),
    ],
)
def test_a_foreign_store_card_is_reduced_to_printable_known_fields(
    tmp_path: Path, s3: S3Server, card: bytes, machine: str
) -> None:
    pushed(tmp_path, s3)
    (path,) = objects(s3, "stores")
    key = path.relative_to(s3.data / s3.bucket / "team" / "proj").as_posix()
    path.write_bytes(packs.seal_segment(card, key, None))
    s3.restart()  # the server caches sizes of what it listed: a fresh start sees the new size
    (listed,) = Machine.make(tmp_path, s3, "b").add_remote().sessions()
    assert listed.machine == machine and listed.workspace_name == ""
