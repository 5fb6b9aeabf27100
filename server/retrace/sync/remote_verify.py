"""``retrace remote verify``: check what the bucket holds for this workspace, as ``remote open``
and ``pull`` would before trusting it — every segment of every session (listed size, seal,
whole lines, the paths its checkpoints name), every pack index (whole entries, inside its pack)
and, on request, every pack's content hash. Reads are bounded like every other read (one object
per upload slot in memory); nothing is written locally and nothing in the bucket changes.
"""

from __future__ import annotations

import hashlib

from retrace.sync.crypto import Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.fetch import RemoteJournal, check_listed
from retrace.sync.journal_check import JournalScan
from retrace.sync.keys import PACKS, SESSIONS, SegmentKey, index_key, pack_key, parse_pack, parse_segment
from retrace.sync.limits import INDEX_BYTES, PACK_BYTES
from retrace.sync.models import RemoteVerifyReport
from retrace.sync.objects import Bucket, ObjectInfo
from retrace.sync.packs import check_index, object_overhead, open_index, open_segment, sealed


def _segment(bucket: Bucket, cipher: Cipher | None, seg: SegmentKey, size: int) -> tuple[str | None, bool]:
    """(why the segment is damaged or ``None``, whether it carries a seal)."""
    journal = RemoteJournal(seg.session_id, seg.store_id, seg.gen, [seg], {seg.key: size})
    try:
        check_listed(journal, [seg], cipher)
        raw = bucket.get(seg.key, limit=seg.end - seg.start + object_overhead(cipher), kind="segment")
        body = open_segment(raw, seg.key, cipher)
        if len(body) != seg.end - seg.start or not body.endswith(b"\n"):
            return (
                f"remote segment {seg.key} holds {len(body)} bytes, its name says {seg.end - seg.start}",
                True,
            )
        scan = JournalScan()
        scan.feed(body)
        if scan.unsafe:
            return (
                f"remote segment {seg.key} names paths outside the workspace: {scan.unsafe_summary()}",
                True,
            )
        return None, sealed(raw, cipher)
    except RemoteError as exc:
        return str(exc), True


def _pack(
    bucket: Bucket, cipher: Cipher | None, name: str, parts: dict[str, ObjectInfo], whole: bool
) -> str | None:
    try:
        if "idx" in parts:
            plain = open_index(
                bucket.get(index_key(name), limit=INDEX_BYTES, kind="pack index"), name, cipher
            )
            check_index(plain, name, parts["pack"].size if "pack" in parts else None)
        if whole and "pack" in parts:
            data = bucket.get(pack_key(name), limit=PACK_BYTES, kind="pack")
            if hashlib.sha256(data).hexdigest() != name:
                return f"remote pack {pack_key(name)} does not match its name (damaged or replaced)"
    except RemoteError as exc:
        return str(exc)
    return None


def verify_remote(bucket: Bucket, cipher: Cipher | None, *, packs: bool = False) -> RemoteVerifyReport:
    segments = [(seg, o.size) for o in bucket.list(SESSIONS) if (seg := parse_segment(o.key)) is not None]
    damaged: list[str] = []
    unsealed = 0
    for problem, has_seal in bucket.map_bounded(lambda s: _segment(bucket, cipher, *s), segments):
        if problem is not None:
            damaged.append(problem)
        elif not has_seal:
            unsealed += 1
    by_pack: dict[str, dict[str, ObjectInfo]] = {}
    for o in bucket.list(PACKS):
        if (parsed := parse_pack(o.key)) is not None:
            by_pack.setdefault(parsed[0], {})[parsed[1]] = o
    names = sorted(by_pack)
    damaged += [
        p for p in bucket.map_bounded(lambda n: _pack(bucket, cipher, n, by_pack[n], packs), names) if p
    ]
    return RemoteVerifyReport(
        remote=bucket.name,
        segments=len(segments),
        unsealed=unsealed,
        packs=len(names),
        packs_hashed=packs,
        damaged=damaged,
    )
