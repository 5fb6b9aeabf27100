"""Local sync state of one remote, under ``<store>/remote/<name>/`` (not history: never part of
the store's size or retention).

``state.json`` (per journal: generation, pushed offset, sha256 of the pushed prefix, next segment
number; packs pushed; last push time and error), ``index/<pack>.idx`` (the remote pack indexes in
clear: what the remote has, and the :class:`~retrace.sync.fetch.RemoteBlobs` map),
``outbox/`` (objects built but not yet confirmed uploaded: uploaded first on the next push),
``imported.json`` (sessions opened from the remote). ``<store>/remote/store-id`` names this
store in the bucket. Every file is written atomically.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.store.atomic import write_atomic
from retrace.engine.store.layout import StoreLayout
from retrace.sync.files import write_json


class JournalState(CamelModel):
    gen: int = 1
    offset: int = 0
    """Bytes pushed (always just after a newline)."""
    file_id: tuple[int, int] | None = None
    """(st_dev, st_ino) of the journal file those bytes were read from."""
    tail_sha: str = ""
    """sha256 of the last ``TAIL_BYTES`` (or fewer) bytes before ``offset``."""
    seq: int = 0


class PushState(CamelModel):
    journals: dict[str, JournalState] = Field(default_factory=dict)
    packs: int = 0
    store_card: bool = False
    last_push: str | None = None
    last_error: str | None = None


class Imported(CamelModel):
    session_id: str
    store_id: str
    gen: int
    bytes: int


class SyncPaths:
    def __init__(self, layout: StoreLayout, name: str) -> None:
        self.layout = layout
        self.dir = layout.remote / name
        self.state = self.dir / "state.json"
        self.index = self.dir / "index"
        self.outbox = self.dir / "outbox"
        self.imported = self.dir / "imported.json"
        self.cards = self.dir / "stores"

    def load_state(self) -> PushState:
        return PushState.model_validate(_read(self.state, {}))

    def save_state(self, state: PushState) -> None:
        write_json(self.state, state.model_dump(mode="json", by_alias=True))

    def load_imported(self) -> dict[str, Imported]:
        raw = _read(self.imported, {})
        return {sid: Imported.model_validate(v) for sid, v in raw.items()}

    def save_imported(self, imported: dict[str, Imported]) -> None:
        write_json(self.imported, {k: v.model_dump(mode="json", by_alias=True) for k, v in imported.items()})

    def cached_indexes(self) -> set[str]:
        if not self.index.is_dir():
            return set()
        return {p.stem for p in self.index.iterdir() if p.suffix == ".idx"}

    def write_index(self, name: str, plain: bytes) -> None:
        write_atomic(self.index / f"{name}.idx", plain)

    def outbox_items(self) -> list[Path]:
        if not self.outbox.is_dir():
            return []
        order = {".pack": 0, ".idx": 1, ".seg": 2}
        items = [p for p in self.outbox.iterdir() if not p.name.startswith(".")]
        return sorted(items, key=lambda p: (order.get(p.suffix, 3), p.name))


def outbox_name(key: str) -> str:
    return key.replace("/", "~")


def outbox_key(path: Path) -> str:
    return path.name.replace("~", "/")


def _read(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def store_id(layout: StoreLayout) -> str:
    """This store's id in buckets (created on first use)."""
    path = layout.remote / "store-id"
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    sid = "s" + secrets.token_hex(8)
    write_atomic(path, sid.encode() + b"\n")
    return path.read_text(encoding="ascii").strip()
