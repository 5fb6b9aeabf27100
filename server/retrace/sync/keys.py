"""Object key names under a workspace prefix: built and parsed here only (pure functions).

``stores/<store-id>.json``, ``packs/<name>.pack`` + ``.idx``,
``sessions/<session>/<store-id>/g<gen:04d>/<seq:08d>-<start>-<end>-<unixms>.seg`` and
``gc/condemned/<pack-name>.json``. Every key is content-addressed or unique to its writer, so no
write ever needs a condition or a lock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STORES = "stores/"
PACKS = "packs/"
SESSIONS = "sessions/"
CONDEMNED = "gc/condemned/"
_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_SEG = re.compile(
    r"^sessions/(?P<sid>[A-Za-z0-9._-]{1,128})/(?P<store>[A-Za-z0-9._-]{1,128})/g(?P<gen>\d{4,18})/"
    r"(?P<seq>\d{8,18})-(?P<start>\d{1,18})-(?P<end>\d{1,18})-(?P<ms>\d{1,18})\.seg$"
)
"""Numbers of at most 18 digits (they fit 63 bits; a longer run of digits is not a key Retrace
writes, and would not even parse as an int past 4300 digits)."""
_PACK = re.compile(r"^packs/(?P<name>[0-9a-f]{64})\.(?P<ext>pack|idx)$")


def valid_id(value: str) -> bool:
    """Session and store ids become key components: no slash, no dot-only names."""
    return bool(_ID.match(value)) and value not in {".", ".."}


def card_key(store_id: str) -> str:
    return f"{STORES}{store_id}.json"


def pack_key(name: str) -> str:
    return f"{PACKS}{name}.pack"


def index_key(name: str) -> str:
    return f"{PACKS}{name}.idx"


def condemned_key(name: str) -> str:
    return f"{CONDEMNED}{name}.json"


def session_prefix(session_id: str, store_id: str | None = None) -> str:
    return f"{SESSIONS}{session_id}/" + (f"{store_id}/" if store_id else "")


@dataclass(frozen=True, order=True)
class SegmentKey:
    session_id: str
    store_id: str
    gen: int
    seq: int
    start: int
    end: int
    unix_ms: int

    @property
    def key(self) -> str:
        return (
            f"{SESSIONS}{self.session_id}/{self.store_id}/g{self.gen:04d}/"
            f"{self.seq:08d}-{self.start}-{self.end}-{self.unix_ms}.seg"
        )


def parse_segment(key: str) -> SegmentKey | None:
    """The segment a listed key names, or ``None`` for anything that is not a key Retrace writes:
    every field that later names a local file (session and store ids) passes :func:`valid_id`."""
    m = _SEG.match(key)
    if m is None or not valid_id(m["sid"]) or not valid_id(m["store"]):
        return None  # a session or store id of "." or "..": never a local path component
    return SegmentKey(
        m["sid"], m["store"], int(m["gen"]), int(m["seq"]), int(m["start"]), int(m["end"]), int(m["ms"])
    )


def parse_pack(key: str) -> tuple[str, str] | None:
    """``packs/<name>.pack`` → ``(name, "pack")``; ``None`` for anything else."""
    m = _PACK.match(key)
    return (m["name"], m["ext"]) if m else None


def parse_condemned(key: str) -> str | None:
    if key.startswith(CONDEMNED) and key.endswith(".json"):
        name = key[len(CONDEMNED) : -len(".json")]
        return name if re.fullmatch(r"[0-9a-f]{64}", name) else None
    return None


def best_generation(segments: list[SegmentKey]) -> tuple[int, list[SegmentKey]] | None:
    """The highest generation whose segments are contiguous from byte 0, and those segments in
    order (a generation with a gap — an upload still under way — is skipped)."""
    by_gen: dict[int, list[SegmentKey]] = {}
    for s in segments:
        by_gen.setdefault(s.gen, []).append(s)
    for gen in sorted(by_gen, reverse=True):
        chain = contiguous(by_gen[gen])
        if chain:
            return gen, chain
    return None


def contiguous(segments: list[SegmentKey]) -> list[SegmentKey]:
    """The longest chain of segments from byte 0 with no gap (duplicates of one range: first)."""
    by_start: dict[int, SegmentKey] = {}
    for s in sorted(segments):
        by_start.setdefault(s.start, s)
    chain: list[SegmentKey] = []
    pos = 0
    while pos in by_start:
        seg = by_start[pos]
        if seg.end <= pos:
            break
        chain.append(seg)
        pos = seg.end
    return chain
