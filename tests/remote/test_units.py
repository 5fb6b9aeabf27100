"""Pure cores of remote sync, table-tested: key names, URL and name validation, the
credential chain, sync packs and segment cutting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard

from retrace.sync.config import check_endpoint, parse_url, resolve_credentials
from retrace.sync.crypto import Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.keys import (
    SegmentKey,
    best_generation,
    condemned_key,
    index_key,
    pack_key,
    parse_condemned,
    parse_pack,
    parse_segment,
    valid_id,
)
from retrace.sync.models import RemoteConfig
from retrace.sync.packs import build_pack, cut_segments, open_entry, open_index, parse_index

H = "ab" * 32


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("sessions/s1/st1/g0001/00000000-0-10-5.seg", SegmentKey("s1", "st1", 1, 0, 0, 10, 5)),
        (
            "sessions/s1/st1/g0012/00000003-10-99-1700000000000.seg",
            SegmentKey("s1", "st1", 12, 3, 10, 99, 1700000000000),
        ),
        ("sessions/s1/st1/g1/00000000-0-10-5.seg", None),  # generation has 4 digits at least
        ("sessions/s1/g0001/00000000-0-10-5.seg", None),  # no store id
        ("sessions/s1/st1/g0001/00000000-0-10-5.seg.tmp", None),
        ("packs/x.pack", None),
    ],
)
def test_segment_keys_parse(key: str, parsed: SegmentKey | None) -> None:
    assert parse_segment(key) == parsed
    if parsed is not None:
        assert parsed.key == key


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        (pack_key(H), (H, "pack")),
        (index_key(H), (H, "idx")),
        ("packs/" + H + ".tmp", None),
        ("packs/ABC.pack", None),
        (condemned_key(H), None),
    ],
)
def test_pack_keys_parse(key: str, parsed: tuple[str, str] | None) -> None:
    assert parse_pack(key) == parsed


def test_condemned_keys_round_trip() -> None:
    assert parse_condemned(condemned_key(H)) == H
    assert parse_condemned("gc/condemned/nothex.json") is None


@pytest.mark.parametrize(
    ("value", "ok"), [("s1", True), ("a.b-c_d", True), ("..", False), ("a/b", False), ("", False)]
)
def test_ids_that_can_be_key_components(value: str, ok: bool) -> None:
    assert valid_id(value) is ok


def seg(gen: int, start: int, end: int, seq: int = 0) -> SegmentKey:
    return SegmentKey("s", "st", gen, seq, start, end, 1)


@pytest.mark.parametrize(
    ("segments", "best"),
    [
        ([seg(1, 0, 10), seg(1, 10, 20, 1)], (1, [seg(1, 0, 10), seg(1, 10, 20, 1)])),
        ([seg(1, 0, 10), seg(2, 0, 5)], (2, [seg(2, 0, 5)])),
        ([seg(1, 0, 10), seg(2, 5, 9)], (1, [seg(1, 0, 10)])),  # gen 2 not from 0: still uploading
        ([seg(1, 0, 10), seg(1, 20, 30, 2)], (1, [seg(1, 0, 10)])),  # a gap ends the chain
        ([seg(3, 4, 8)], None),
        ([], None),
    ],
)
def test_best_generation(segments: list[SegmentKey], best: tuple[int, list[SegmentKey]] | None) -> None:
    assert best_generation(segments) == best


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("s3://bucket", ("bucket", "")),
        ("s3://my.bucket-1/team/retrace/", ("my.bucket-1", "team/retrace")),
    ],
)
def test_good_urls(url: str, parsed: tuple[str, str]) -> None:
    assert parse_url(url) == parsed


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://bucket/x", "must look like s3://bucket/prefix"),
        ("s3://", "invalid bucket name"),
        ("s3://UPPER/x", "invalid bucket name"),
        ("s3://bucket/a/../b", "invalid prefix component '..'"),
        ("s3://bucket/a b", "invalid prefix component"),
    ],
)
def test_bad_urls_are_one_line(url: str, says: str) -> None:
    with pytest.raises(RemoteError, match=says) as err:
        parse_url(url)
    assert "\n" not in str(err.value)


def test_bad_endpoint() -> None:
    with pytest.raises(RemoteError, match="http"):
        check_endpoint("localhost:9000")
    assert check_endpoint("http://127.0.0.1:9000/") == "http://127.0.0.1:9000"


def remote() -> RemoteConfig:
    return RemoteConfig(name="origin", url="s3://bucket/p", workspace_name="w")


def test_credentials_from_env_then_profile(tmp_path: Path) -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "envsecret", "HOME": str(tmp_path)}
    creds = resolve_credentials(remote(), env)
    assert (creds.access_key_id, creds.region) == ("AKIAENV", "us-east-1")
    assert "envsecret" not in repr(creds)
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIADEF\naws_secret_access_key = defsecret\n"
        "[work]\naws_access_key_id = AKIAWORK\naws_secret_access_key = worksecret\n"
    )
    home = {"HOME": str(tmp_path), "AWS_REGION": "eu-west-3"}
    assert resolve_credentials(remote(), home).access_key_id == "AKIADEF"
    assert resolve_credentials(remote(), home).region == "eu-west-3"
    assert resolve_credentials(remote(), {**home, "AWS_PROFILE": "work"}).access_key_id == "AKIAWORK"
    with pytest.raises(RemoteError, match=r"no credentials .* \[nope\] profile") as err:
        resolve_credentials(remote(), {**home, "AWS_PROFILE": "nope"})
    assert "defsecret" not in str(err.value)


def pack_items(n: int) -> list[tuple[str, bytes, int]]:
    out = []
    for i in range(n):
        raw = f"content {i}\n".encode() * (i + 1)
        import hashlib

        out.append((hashlib.sha256(raw).hexdigest(), zstandard.ZstdCompressor().compress(raw), len(raw)))
    return out


def test_sync_packs_are_deterministic_and_indexed() -> None:
    items = pack_items(5)
    one, two = build_pack(items, None), build_pack(list(reversed(items)), None)
    assert (one.name, one.data, one.index) == (two.name, two.data, two.index)
    where = parse_index(open_index(one.index, one.name, None))
    for bid, payload, size in items:
        off, ln, raw = where[bid]
        assert open_entry(one.data[off : off + ln], bid, None) == payload
        assert raw == size


def test_encrypted_packs_hide_ids_and_content() -> None:
    cipher = Cipher(os.urandom(32))
    items = pack_items(3)
    built = build_pack(items, cipher)
    for bid, payload, _size in items:
        assert bytes.fromhex(bid) not in built.index and payload not in built.data
    where = parse_index(open_index(built.index, built.name, cipher))
    for bid, payload, _size in items:
        off, ln, _raw = where[bid]
        assert open_entry(built.data[off : off + ln], bid, cipher) == payload
    with pytest.raises(RemoteError):
        open_index(built.index, built.name, Cipher(os.urandom(32)))


@pytest.mark.parametrize(
    ("data", "limit", "pieces"),
    [
        (b"a\nb\nc\n", 4, [b"a\nb\n", b"c\n"]),
        (b"a\nb\nc\n", 100, [b"a\nb\nc\n"]),
        (b"long line\nx\n", 3, [b"long line\n", b"x\n"]),  # a line longer than the limit: alone
        (b"", 4, []),
    ],
)
def test_cut_segments_at_newlines(data: bytes, limit: int, pieces: list[bytes]) -> None:
    assert cut_segments(data, limit) == pieces


class FakeBucket:
    """What RemoteBlobs uses of a bucket: whole and ranged GETs; ``gone`` packs fail."""

    def __init__(self, objects: dict[str, bytes], gone: set[str]) -> None:
        self.objects = objects
        self.gone = gone
        self.ranges = True
        self.gets: list[str] = []

    def get(self, key: str, *, limit: int, kind: str = "object") -> bytes:
        self.gets.append(key)
        if key in self.gone:
            raise RemoteError(f"remote 'origin': {key} does not exist")
        return self.objects[key]

    def get_range(self, key: str, start: int, end: int, *, limit: int = 0) -> bytes:
        return self.get(key, limit=limit)[start:end]


def test_remote_blobs_read_a_small_pack_once_and_fall_back_to_another_copy(tmp_path: Path) -> None:
    from retrace.sync.fetch import RemoteBlobs

    items = pack_items(3)
    first, second = build_pack(items[:2], None), build_pack(items, None)
    index = tmp_path / "index"
    index.mkdir()
    for built in (first, second):
        (index / f"{built.name}.idx").write_bytes(built.plain_index)
    bucket = FakeBucket({pack_key(first.name): first.data, pack_key(second.name): second.data}, set())
    source = RemoteBlobs(index, lambda: bucket, None)  # type: ignore[arg-type,return-value]
    assert source.ids() == {b for b, _p, _s in items}
    for bid, payload, _size in items:
        assert source.fetch(bid) == payload
    assert len(bucket.gets) == len(set(bucket.gets))  # each pack read once, whole

    bucket.gone = {pack_key(first.name)}
    again = RemoteBlobs(index, lambda: bucket, None)  # type: ignore[arg-type,return-value]
    for bid, payload, _size in items:
        assert again.fetch(bid) == payload  # the first copy's pack was deleted: the second serves


@pytest.mark.parametrize(
    ("sizes", "concurrency", "packs"),
    [
        ({}, 4, []),
        ({"a": 10, "b": 10, "c": 10}, 4, [["a", "b", "c"]]),  # little to send: one pack
        (
            {f"{i:02d}": 3 << 20 for i in range(8)},
            4,
            [["00", "01"], ["02", "03"], ["04", "05"], ["06", "07"]],
        ),
        ({f"{i:02d}": 40 << 20 for i in range(3)}, 1, [["00"], ["01"], ["02"]]),  # never over 64 MiB
    ],
)
def test_blobs_are_planned_into_packs(
    sizes: dict[str, int], concurrency: int, packs: list[list[str]]
) -> None:
    from retrace.sync.push import plan_packs

    assert [[bid for bid, _size in group] for group in plan_packs(sizes, concurrency)] == packs


@pytest.mark.parametrize(
    ("message", "short"),
    [
        (
            "Generic S3 error: Error performing list request: Error performing GET http://127.0.0.1:9/b?x in "
            "331ms, after 3 retries, max_retries: 3, retry_timeout: 60s  - HTTP error: error sending request",
            "HTTP error: error sending request (after 3 retries)",
        ),
        ("Generic S3 error: something odd\nDebug source: ...", "Generic S3 error: something odd"),
        ("", "OSError"),
    ],
)
def test_obstore_errors_are_cut_to_what_helps(message: str, short: str) -> None:
    from retrace.sync.objects import reason

    assert reason(OSError(message) if message else OSError()) == short


def test_uploads_are_paced_under_the_bandwidth_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrace.sync import objects

    clock = [100.0]
    slept: list[float] = []
    monkeypatch.setattr(objects.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(objects.time, "sleep", slept.append)
    config = RemoteConfig(name="o", url="s3://bucket/p", workspace_name="w", max_bytes_per_second=1000)
    bucket = objects.Bucket(config, bucket_env())
    bucket.throttle(500)  # 0.5 s of budget due: sleeps until then
    bucket.throttle(1500)  # 2 s due in all
    assert slept == [0.5, 2.0]
    unlimited = objects.Bucket(config.model_copy(update={"max_bytes_per_second": None}), bucket_env())
    unlimited.throttle(10**9)
    assert slept == [0.5, 2.0]


def bucket_env() -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "k" * 16, "AWS_SECRET_ACCESS_KEY": "s" * 16}


def test_read_new_reads_on_from_the_offset_and_starts_a_generation_when_the_prefix_changed(
    tmp_path: Path,
) -> None:
    from retrace.sync.push import read_new
    from retrace.sync.state import JournalState

    journal = tmp_path / "journal.jsonl"
    journal.write_bytes(b'{"a":1}\n{"b":2}\n{"torn"')
    first = read_new("s", journal, JournalState())
    assert first is not None and first.new == b'{"a":1}\n{"b":2}\n' and first.start == 0
    pushed = first.state.model_copy(
        update={"offset": len(first.new), "tail_sha": first.tail_sha(len(first.new))}
    )
    assert read_new("s", journal, pushed) is None, "nothing after the offset but a torn line"

    with journal.open("ab") as f:  # appended in place: the prefix stands
        f.write(b":3}\n")
    more = read_new("s", journal, pushed)
    assert more is not None and more.state.gen == pushed.gen and more.new == b'{"torn":3}\n'

    with journal.open("r+b") as f:  # same file, same length, a changed byte before the offset
        f.seek(2)
        f.write(b"z")
    changed = read_new("s", journal, pushed)
    assert changed is not None and changed.state.gen == pushed.gen + 1 and changed.start == 0

    replaced = tmp_path / "j2"
    replaced.write_bytes(b'{"a":1}\n{"b":2}\n{"torn":3}\n')
    replaced.replace(journal)  # a new file (a local gc's rename): a new generation even if equal
    again = read_new("s", journal, pushed)
    assert again is not None and again.state.gen == pushed.gen + 1
