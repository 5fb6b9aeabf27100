"""Corruption is never shown or written, and damage stays local — through the real CLI.

Blob damage (flipped byte, truncation, deletion, a swapped-in valid blob of other content):
``retrace diff`` refuses instead of showing it, a restore that cannot get every byte fails as a
whole (exit 1, nothing changed, checkpoint and path named), a merge resolution never writes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_support import Cli
from tests.oracles import file_bytes
from tests.safety.store_damage import BLOB_DAMAGE, damage_blob, sha

pytestmark = pytest.mark.slow

A1 = b"".join(b"line %d of a\n" % i for i in range(40))
A2 = A1.replace(b"line 7 of a", b"LINE SEVEN of a")
A3 = A2.replace(b"line 30 of a", b"LINE THIRTY of a")
B1 = b"b version one\n"
B2 = b"b version two\n"


def _history(cli: Cli) -> tuple[str, str]:
    """Two checkpoints: C1 (a=A2, b=B1) then C2 (a=A3, b=B2); the workspace is at C2."""
    ws = cli.workspace
    (ws / "a.txt").write_bytes(A1)
    (ws / "b.txt").write_bytes(B1)
    cli("init")
    (ws / "a.txt").write_bytes(A2)
    c1 = cli("checkpoint").stdout.strip()
    (ws / "a.txt").write_bytes(A3)
    (ws / "b.txt").write_bytes(B2)
    c2 = cli("checkpoint").stdout.strip()
    return c1, c2


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_diff_never_shows_damaged_content(cli: Cli, how: str) -> None:
    c1, c2 = _history(cli)
    damage_blob(cli.store, sha(A2), how)
    proc = cli("diff", c1, c2, code=None)
    assert proc.returncode != 0, proc.stdout
    assert "EVIL" not in proc.stdout
    assert "LINE SEVEN" not in proc.stdout  # nothing of a.txt's damaged side is shown as real
    assert sha(A2) in proc.stderr and "a.txt" in proc.stderr and c1 in proc.stderr


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_restore_with_a_damaged_blob_changes_nothing(cli: Cli, how: str) -> None:
    c1, _c2 = _history(cli)
    damage_blob(cli.store, sha(A2), how)
    before = file_bytes(cli.workspace)
    proc = cli("restore", c1, code=1)
    assert file_bytes(cli.workspace) == before  # b.txt (intact blob) was not restored either
    assert c1 in proc.stderr and "a.txt" in proc.stderr
    assert cli.json("log")[-1]["kind"] != "restore"


@pytest.mark.parametrize("how", BLOB_DAMAGE)
def test_merge_resolution_never_writes_damaged_content(cli: Cli, how: str) -> None:
    c1, _c2 = _history(cli)
    # An unrecorded edit: restoring a.txt is a conflict that a clean 3-way merge could resolve.
    mine = A3.replace(b"line 39 of a", b"my own line 39")
    (cli.workspace / "a.txt").write_bytes(mine)
    damage_blob(cli.store, sha(A2), how)
    proc = cli("restore", c1, "--resolve", "a.txt=merge", code=None)
    assert proc.returncode != 0
    assert (cli.workspace / "a.txt").read_bytes() == mine
    assert (cli.workspace / "b.txt").read_bytes() == B2


def test_undamaged_history_still_restores(cli: Cli) -> None:
    """Control: the same history restores fine when nothing is damaged."""
    c1, _c2 = _history(cli)
    cli("restore", c1)
    assert (cli.workspace / "a.txt").read_bytes() == A2
    assert (cli.workspace / "b.txt").read_bytes() == B1


def test_write_to_streams_and_verifies(tmp_path: Path) -> None:
    import io

    from retrace.engine.errors import BlobCorrupt
    from retrace.engine.store.blobs import STREAM_CHUNK, BlobStore

    store = BlobStore(tmp_path / "blobs")
    big = bytes(range(256)) * (3 * STREAM_CHUNK // 256 + 7)
    with store.batch() as batch:
        packed = batch.put(big)
    loose = store.put(A1)
    for bid, data in ((packed, big), (loose, A1)):
        out = io.BytesIO()
        assert store.write_to(bid, out) == len(data)
        assert out.getvalue() == data
        assert store.check(bid) is None
    damage_blob(tmp_path, packed, "substitute")
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(BlobCorrupt):
        store.write_to(packed, io.BytesIO())
    with pytest.raises(BlobCorrupt):
        store.get(packed)
    assert store.check(packed) == "its content does not match its hash"
