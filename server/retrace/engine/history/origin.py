"""Which checkpoint lines this store wrote: the local/foreign split everything local rests on.

A store holds journals of other machines too (sessions opened from a shared bucket, a journal
copied in by hand). Their ids, parents and timestamps are another machine's: they must never
decide this workspace's head, the parent of the next local checkpoint, the next local id, or
which local checkpoints retention keeps. So every checkpoint line this store commits carries an
``origin``: its local creation number ``seq`` (0, 1, 2… in commit order, whatever the clock)
and ``mac``, a keyed hash of (journal's session id, checkpoint id, seq) under ``originKey``, a
random key kept in ``store.json`` and never uploaded. A line is *local* only when its mac
verifies for the journal it sits in: a line copied from our pushed journals into another
session, or one with a forged ``origin``, is foreign. Stores written before origins existed are
marked ``legacyLines``: their untagged lines count as local, ranked before every tagged one
(in a store created since, an untagged line is foreign).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from retrace.engine.store.events import LocalOrigin
from retrace.engine.store.layout import StoreLayout

KEY_FIELD = "originKey"
LEGACY_FIELD = "legacyLines"
LEGACY_SEQ = -1
"""The local creation number of an untagged line in a legacy store (before every tagged one)."""


def new_key() -> str:
    return secrets.token_hex(32)


@dataclass(frozen=True)
class Origins:
    key: bytes | None
    legacy: bool

    def __post_init__(self) -> None:
        # The keyed state once; each line hashes a copy of it (an open checks every line).
        keyed = None if self.key is None else hashlib.blake2b(key=self.key, digest_size=16)
        object.__setattr__(self, "_keyed", keyed)

    def _mac(self, sid: str, cid: str, seq: int) -> str:
        h = self._keyed.copy()  # type: ignore[attr-defined]
        h.update(f"{sid}\n{cid}\n{seq}".encode("utf-8", "surrogatepass"))
        return str(h.hexdigest())

    def stamp(self, sid: str, cid: str, seq: int) -> LocalOrigin | None:
        """The origin of a line this store commits (``None`` without a key: a reader)."""
        return None if self.key is None else LocalOrigin(seq=seq, mac=self._mac(sid, cid, seq))

    def local_seq(self, sid: str, cid: str, raw: object) -> int | None:
        """The local creation number of a line of journal ``sid`` holding checkpoint ``cid``
        with ``origin`` ``raw`` (as read: untrusted); ``None`` when the line is foreign."""
        if raw is None:
            return LEGACY_SEQ if self.legacy else None
        if self.key is None or not isinstance(raw, dict):
            return None
        seq, mac = raw.get("seq"), raw.get("mac")
        if type(seq) is not int or not 0 <= seq < 1 << 53 or not isinstance(mac, str):
            return None
        return seq if hmac.compare_digest(mac, self._mac(sid, cid, seq)) else None


def load_origins(layout: StoreLayout) -> Origins:
    """The store's origin key as ``store.json`` holds it (a reader never creates one)."""
    try:
        meta: Any = json.loads(layout.meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    raw = meta.get(KEY_FIELD)
    try:
        key = bytes.fromhex(raw) if isinstance(raw, str) and len(raw) == 64 else None
    except ValueError:
        key = None
    return Origins(key=key, legacy=key is None or bool(meta.get(LEGACY_FIELD)))


def ensure_origin_key(layout: StoreLayout) -> None:
    """Give a store written before origins existed its key (the writer does, under its lock);
    the lines it already holds are then local legacy lines."""
    meta = layout.read_meta()
    if isinstance(meta.get(KEY_FIELD), str) and len(meta[KEY_FIELD]) == 64:
        return
    meta[KEY_FIELD] = new_key()
    meta[LEGACY_FIELD] = bool(layout.session_ids())
    tmp = layout.meta.with_name(layout.meta.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(layout.meta)
