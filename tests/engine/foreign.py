"""Helpers for tests of ids and clocks from elsewhere: a session made by another store (another
machine) brought into a local store the way ``remote open`` does (its journal copied under
``sessions/<id>/``, its blobs available), with its ids or timestamps rewritten at will."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from retrace.engine import Engine
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.journal import seal_event
from retrace.engine.store.layout import StoreLayout

Rewrite = Callable[[bytes], bytes]


def foreign_session(
    tmp_path: Path, name: str, files: dict[str, str], steps: int = 2
) -> tuple[Path, str, list[str]]:
    """Another machine's store with one session of ``steps`` checkpoints (each changes
    ``files``) after its baseline; returns (store, session id, every checkpoint id of the
    session in commit order, the baseline first)."""
    ws = tmp_path / f"{name}-ws"
    ws.mkdir()
    store = tmp_path / f"{name}-store"
    with Engine.open(ws, store, session_id=f"{name}-session") as eng:
        for step in range(steps):
            for rel, text in files.items():
                (ws / rel).write_text(f"{text} {step}\n")
            eng.checkpoint(f"{name} step {step}", kind="tool", tool="edit_file")
        sid = eng.session_id
        ids = [c.id for c in eng.timeline(sid)]
    return store, sid, ids


def import_session(
    src_store: Path, sid: str, dst_store: Path, rewrite: Rewrite | None = None, as_sid: str | None = None
) -> None:
    """Copy session ``sid`` of ``src_store`` into ``dst_store`` (as ``as_sid``), with every blob it
    may need; ``rewrite`` changes the journal's bytes on the way (ids, times)."""
    src, dst = StoreLayout(src_store), StoreLayout(dst_store)
    data = src.journal(sid).read_bytes()
    if rewrite is not None:
        data = _resealed(rewrite(data))
    target = dst.journal(as_sid or sid)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    have, want = BlobStore(dst.blobs), BlobStore(src.blobs)
    for bid in want.local_ids():
        if not have.has_local(bid):
            have.put(want.get(bid))


def _resealed(data: bytes) -> bytes:
    """Every line sealed again after a rewrite: the other machine wrote these lines as they now
    read (its own checksums), so what the tests exercise is ids and clocks, not damage."""
    lines = [seal_event(json.loads(raw)) if raw.strip() else raw for raw in data.split(b"\n")]
    return b"\n".join(lines)


def rename_ids(mapping: dict[str, str]) -> Rewrite:
    def rewrite(data: bytes) -> bytes:
        for old, new in mapping.items():
            data = data.replace(old.encode(), new.encode())
        return data

    return rewrite


def copy_store(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
