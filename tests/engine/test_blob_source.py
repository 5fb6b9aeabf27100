"""The engine's one seam for remote storage: a ``BlobSource`` attached to the blob store."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from retrace.engine import Engine
from retrace.engine.errors import BlobCorrupt, RetraceError
from retrace.engine.store.blobs import BlobStore, blob_id
from retrace.engine.store.layout import StoreLayout
from retrace.engine.verify import verify_store


class Source:
    def __init__(self, blobs: dict[str, bytes], *, fail: str | None = None) -> None:
        self.blobs = blobs
        self.fail = fail
        self.fetched: list[str] = []

    def ids(self) -> set[str]:
        return set(self.blobs)

    def fetch(self, bid: str) -> bytes:
        if self.fail:
            raise RetraceError(self.fail)
        self.fetched.append(bid)
        return self.blobs[bid]


def payload(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def test_a_missing_blob_is_fetched_verified_and_kept(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    data = b"only in the remote\n"
    bid = blob_id(data)
    src = Source({bid: payload(data)})
    store.attach_source(src)
    assert store.has(bid) and not store.has_local(bid) and store.remote_only(bid)
    assert bid in set(store.ids()) and bid not in set(store.local_ids())
    assert store.get(bid) == data
    assert store.has_local(bid) and not store.remote_only(bid)
    assert store.get(bid) == data
    assert src.fetched == [bid]  # kept locally: fetched once


def test_a_remote_copy_that_does_not_match_its_id_is_refused(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    bid = blob_id(b"the real content")
    store.attach_source(Source({bid: payload(b"something else")}))
    with pytest.raises(BlobCorrupt, match="remote copy does not match"):
        store.get(bid)
    assert not store.has_local(bid)


def test_an_unreachable_remote_is_one_line_naming_the_blob(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    bid = blob_id(b"x")
    store.attach_source(Source({bid: b""}, fail="remote 'origin': GET packs/p failed: connection refused"))
    with pytest.raises(RetraceError) as err:
        store.get(bid)
    assert str(err.value).startswith(f"blob {bid} is only in the remote: remote 'origin'")
    assert "\n" not in str(err.value)


def test_putting_a_blob_the_remote_has_still_stores_it_here(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    data = b"both here and there"
    bid = blob_id(data)
    src = Source({bid: payload(data)})
    store.attach_source(src)
    store.put(data)
    assert store.has_local(bid) and src.fetched == []


def test_verify_counts_remote_only_blobs_as_remote_not_damage(tmp_path: Path) -> None:
    ws, store_dir = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    with Engine.open(ws, store_dir, session_id="s") as eng:
        eng.checkpoint("one")
    layout = StoreLayout(store_dir)
    blobs = BlobStore(layout.blobs)
    moved = {bid: blobs.payload(bid) for bid in blobs.local_ids()}
    for bid in moved:
        blobs.remove(bid)
    assert not verify_store(layout).report.ok
    report = verify_store(layout, remote=Source(moved).ids()).report
    assert report.ok and report.remote_blobs >= 1 and report.damage == []
