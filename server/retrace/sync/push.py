"""Push: upload what the remote lacks, resumably, without ever taking the engine's lock.

Order (each step only after the previous one):

1. the outbox: objects built by an earlier push but not confirmed uploaded (a crash, a network
   loss) are uploaded first — same key, same bytes, so nothing is duplicated;
2. the remote index: one LIST of ``packs/`` and of ``gc/condemned/``; indexes not cached yet are
   fetched (what other machines pushed counts as present; a condemned pack's blobs do not);
3. the journals' sizes are read (each up to its last newline), THEN the local blobs are listed:
   every blob a pushed journal line references is in that listing;
4. blobs the remote lacks → sync packs (≤ 64 MiB) → ``.pack`` then ``.idx``;
5. each journal's new bytes → sealed segments (≤ 8 MiB, cut at newlines). When a local gc
   rewrote a journal (the sha256 of the pushed prefix no longer matches) the journal starts a new
   generation from byte 0.

Every object is written to the outbox and the state saved (atomically) before it is uploaded,
and removed from the outbox once uploaded, so a push killed anywhere resumes where it stopped.
Only files are read: loose blobs and published packs are immutable; a blob that vanished (a
local gc) is skipped this round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from retrace.engine.errors import BlobCorrupt
from retrace.engine.store.atomic import write_atomic
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.cursor import JournalMark, read_increment, tail_digest
from retrace.engine.store.layout import StoreLayout
from retrace.sync.crypto import Cipher
from retrace.sync.errors import RemoteError
from retrace.sync.gc import condemned_packs
from retrace.sync.keys import (
    PACKS,
    SegmentKey,
    card_key,
    index_key,
    pack_key,
    parse_pack,
)
from retrace.sync.limits import INDEX_BYTES, INDEX_ENTRIES
from retrace.sync.models import PushReport, RemoteConfig, SyncPhase, SyncProgress
from retrace.sync.objects import Bucket
from retrace.sync.packs import (
    MAX_PACK_BYTES,
    build_pack,
    check_index,
    cut_segments,
    open_index,
    parse_index,
    seal_segment,
)
from retrace.sync.state import (
    Imported,
    JournalState,
    PushState,
    SyncPaths,
    outbox_key,
    outbox_name,
)

log = logging.getLogger(__name__)
ProgressFn = Callable[[SyncProgress], None]
MIN_SPLIT_BYTES = 8 << 20
"""Below this much to send, one pack (fewest requests); above, at least one pack per upload slot."""


class Cancelled(Exception):  # noqa: N818 (a control-flow signal, not an error)
    pass


@dataclass
class _Tally:
    packs: int = 0
    blobs: int = 0
    segments: int = 0
    bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class JournalCut:
    """New bytes of one journal to push: ``new`` (ending at a newline) starts at byte ``start``;
    ``before`` is the journal's last ``TAIL_BYTES`` (or fewer) bytes before ``start``."""

    session_id: str
    state: JournalState
    start: int
    new: bytes
    before: bytes

    def tail_sha(self, pos: int) -> str:
        """The fingerprint recorded for a push that ends at byte ``pos`` of the journal."""
        return tail_digest(self.before + self.new[: pos - self.start])


class Pusher:
    def __init__(
        self,
        layout: StoreLayout,
        config: RemoteConfig,
        bucket: Bucket,
        *,
        cipher: Cipher | None,
        store_id: str,
        card: bytes,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.layout = layout
        self.config = config
        self.bucket = bucket
        self.cipher = cipher
        self.store_id = store_id
        self.card = card
        self.paths = SyncPaths(layout, config.name)
        self.progress = progress
        self.cancel = cancel
        self.tally = _Tally()
        self._state_lock = threading.Lock()

    # ------------------------------------------------------------------ helpers
    def _report(self, phase: SyncPhase, done: int, total: int, bytes_done: int, bytes_total: int) -> None:
        if self.progress is not None:
            self.progress(SyncProgress(
                remote=self.config.name, phase=phase, done=done, total=total,
                bytes_done=bytes_done, bytes_total=bytes_total,
            ))  # fmt: skip

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled

    def _stage(self, key: str, data: bytes) -> None:
        box = self.paths.outbox / outbox_name(key)
        if not box.exists():
            write_atomic(box, data)

    def _upload(self, key: str, data: bytes) -> None:
        """Put one object through the outbox (kept there until the PUT succeeded)."""
        self._check_cancel()
        self._stage(key, data)
        box = self.paths.outbox / outbox_name(key)
        self.bucket.put(key, data)
        with self.tally.lock:
            self.tally.bytes += len(data)
        box.unlink(missing_ok=True)

    # ------------------------------------------------------------------ the steps
    def run(self, state: PushState) -> PushReport:
        t0 = time.monotonic()
        self.flush_outbox(segments=False)
        if not state.store_card:
            key = card_key(self.store_id)
            self.bucket.put(key, seal_segment(self.card, key, self.cipher))
            state.store_card = True
            self.paths.save_state(state)
        present = self.refresh_index()
        cuts = journal_cuts(self.paths, state)
        local = BlobStore(self.layout.blobs)
        self.push_blobs(local, set(local.local_ids()) - present, state)
        # Segments an earlier push staged go only now, after every local blob the remote lacks
        # (condemned packs count as lacking) was uploaded: a push cut off for longer than the
        # remote GC's grace period must not publish a segment whose pack was deleted meanwhile.
        self.flush_outbox(segments=True)
        self.push_journals(cuts, state)
        state.last_push = datetime.now(UTC).isoformat()
        state.last_error = None
        self.paths.save_state(state)
        t = self.tally
        self._report("done", 1, 1, t.bytes, t.bytes)
        return PushReport(
            remote=self.config.name, packs=t.packs, blobs=t.blobs, segments=t.segments,
            bytes=t.bytes, seconds=round(time.monotonic() - t0, 3),
            up_to_date=t.packs == 0 and t.segments == 0,
        )  # fmt: skip

    def flush_outbox(self, *, segments: bool) -> None:
        """Upload what an earlier push staged: packs and indexes (``segments=False``) or the
        journal segments (``segments=True``)."""
        items = [p for p in self.paths.outbox_items() if outbox_key(p).endswith(".seg") == segments]
        for n, path in enumerate(items):
            self._check_cancel()
            key = outbox_key(path)
            data = path.read_bytes()
            self.bucket.put(key, data)
            parsed = parse_pack(key)
            t = self.tally
            t.bytes += len(data)
            if parsed is not None and parsed[1] == "idx":
                plain = open_index(data, parsed[0], self.cipher)
                self.paths.write_index(parsed[0], plain)
                t.packs += 1
                t.blobs += len(parse_index(plain))
            elif key.endswith(".seg"):
                t.segments += 1
            path.unlink(missing_ok=True)
            self._report("blobs", n + 1, len(items), 0, 0)

    def refresh_index(self) -> set[str]:
        """Blob ids the remote has (cached indexes, refreshed from one LIST), minus condemned. An
        index that fails its checks (too big, not whole entries, past its pack) is not cached and
        its pack counts as absent: its blobs are uploaded again, the push goes on."""
        listed = self.bucket.list(PACKS)
        sizes = {p: o.size for o in listed if (p := parse_pack(o.key))}
        remote_packs = {name for name, ext in sizes if ext == "idx"}
        missing = sorted(remote_packs - self.paths.cached_indexes())
        for n, name in enumerate(missing):
            self._check_cancel()
            try:
                raw = self.bucket.get(index_key(name), limit=INDEX_BYTES, kind="pack index")
                plain = open_index(raw, name, self.cipher)
                check_index(plain, name, sizes.get((name, "pack")))
            except RemoteError as exc:
                log.warning("push: %s", exc)
                continue
            self.paths.write_index(name, plain)
            self._report("indexes", n + 1, len(missing), 0, 0)
        condemned = condemned_packs(self.bucket)  # their blobs must be uploaded again
        present: set[str] = set()
        for name in (remote_packs - condemned) & self.paths.cached_indexes():
            present.update(parse_index((self.paths.index / f"{name}.idx").read_bytes()))
        return present

    def push_blobs(self, local: BlobStore, missing: set[str], state: PushState) -> None:
        groups = plan_packs(
            {bid: size for bid in missing if (size := _raw_size(local, bid)) is not None},
            self.bucket.max_concurrency,
        )
        total_bytes = sum(size for group in groups for _bid, size in group)
        done = [0, 0]

        def one(group: list[tuple[str, int]]) -> None:
            entries: list[tuple[str, bytes, int]] = []
            for bid, size in group:
                try:
                    entries.append((bid, local.payload(bid), size))
                except (BlobCorrupt, OSError):
                    continue  # removed by a local gc since the listing: not referenced any more
            if not entries:
                return
            built = build_pack(entries, self.cipher)
            # Both in the outbox before either is sent: a pack never reaches the bucket
            # without its index following it on the next push.
            self._stage(index_key(built.name), built.index)
            self._upload(pack_key(built.name), built.data)
            self._upload(index_key(built.name), built.index)
            self.paths.write_index(built.name, built.plain_index)
            with self._state_lock:
                self.tally.packs += 1
                self.tally.blobs += built.blobs
                state.packs += 1
                self.paths.save_state(state)
                done[0] += 1
                done[1] += sum(size for _bid, size in group)
                self._report("blobs", done[0], len(groups), done[1], total_bytes)

        self.bucket.map_bounded(one, groups)

    def push_journals(self, cuts: list[JournalCut], state: PushState) -> None:
        total = sum(len(c.new) for c in cuts)
        done = [0, 0]

        def one(cut: JournalCut) -> None:
            js = cut.state
            pos = cut.start
            for piece in cut_segments(cut.new):
                self._check_cancel()
                seg = SegmentKey(
                    cut.session_id,
                    self.store_id,
                    js.gen,
                    js.seq,
                    pos,
                    pos + len(piece),
                    int(time.time() * 1000),
                )
                data = seal_segment(piece, seg.key, self.cipher)
                pos += len(piece)
                # Staged and recorded before it is sent: a push killed now sends this very
                # object (same key) from the outbox next time, never a second copy of the range.
                self._stage(seg.key, data)
                with self._state_lock:
                    js.seq += 1
                    js.offset = pos
                    js.tail_sha = cut.tail_sha(pos)
                    state.journals[cut.session_id] = js
                    self.paths.save_state(state)
                self._upload(seg.key, data)
                with self._state_lock:
                    self.tally.segments += 1
                    done[0] += 1
                    done[1] += len(piece)
                    self._report("journals", done[0], len(cuts), done[1], total)

        self.bucket.map_bounded(one, cuts)


def journal_cuts(paths: SyncPaths, state: PushState) -> list[JournalCut]:
    """What each journal has to push (local files only: ``status`` uses it too)."""
    layout = paths.layout
    cuts: list[JournalCut] = []
    imported = paths.load_imported()
    for sid in layout.session_ids():
        if sid not in state.journals and not continued_here(layout.journal(sid), imported.get(sid)):
            continue  # opened from the remote and not continued here: the remote has it
        js = state.journals.get(sid) or JournalState()
        cut = read_new(sid, layout.journal(sid), js)
        if cut is not None:
            cuts.append(cut)
    return cuts


def continued_here(path: Path, imported: Imported | None) -> bool:
    """A local session (never imported), or an imported one this store has written to since
    (pushed whole under this store's id)."""
    if imported is None:
        return True
    try:
        return path.stat().st_size != imported.bytes
    except FileNotFoundError:
        return False


def _raw_size(local: BlobStore, bid: str) -> int | None:
    try:
        return local.raw_size(bid)
    except (BlobCorrupt, OSError):
        return None  # removed by a local gc since the listing


def plan_packs(sizes: dict[str, int], concurrency: int) -> list[list[tuple[str, int]]]:
    """Blobs (id → raw size) grouped into packs of at most ``MAX_PACK_BYTES`` and
    ``INDEX_ENTRIES`` blobs (what a reader accepts of an index), and into at least
    ``concurrency`` packs when there is more than ``MIN_SPLIT_BYTES`` in all (parallel uploads),
    in blob id order. Payloads are read only when a pack is built: memory stays bounded."""
    total = sum(sizes.values())
    target = MAX_PACK_BYTES
    if total > MIN_SPLIT_BYTES:
        target = min(
            MAX_PACK_BYTES, max(MIN_SPLIT_BYTES // max(1, concurrency), -(-total // max(1, concurrency)))
        )
    groups: list[list[tuple[str, int]]] = [[]]
    size = 0
    for bid in sorted(sizes):
        if (size + sizes[bid] > target or len(groups[-1]) >= INDEX_ENTRIES) and groups[-1]:
            groups.append([])
            size = 0
        groups[-1].append((bid, sizes[bid]))
        size += sizes[bid]
    return [g for g in groups if g]


def read_new(session_id: str, path: Path, js: JournalState) -> JournalCut | None:
    """What the journal gained since the pushed offset, up to its last newline (``None``: nothing).

    The journal cursor (:func:`~retrace.engine.store.cursor.read_increment`, ``tail`` check)
    decides: only the new bytes and a short tail before the offset are read. The pushed prefix
    still stands when the file is the one it was read from (same device and inode), is at least
    as long, and the ``TAIL_BYTES`` before the offset hash as recorded; otherwise the journal
    starts a new generation from byte 0."""
    mark = _pushed_mark(path, js)
    inc = read_increment(path, mark)
    if inc is None:
        return None
    state = js.model_copy()
    if js.offset and (mark is None or inc.restarted):
        state = JournalState(gen=js.gen + 1)
    state.file_id = (inc.mark.dev, inc.mark.ino)
    if not inc.new:
        return None
    return JournalCut(session_id, state, inc.start, inc.new, inc.before)


def _pushed_mark(path: Path, js: JournalState) -> JournalMark | None:
    """The cursor mark of what was pushed (the state keeps no modification time: the file's
    current one, so only identity, length and the tail digest decide, never the racy shortcut)."""
    if not js.offset or js.file_id is None:
        return None
    try:
        mtime_ns = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    dev, ino = js.file_id
    return JournalMark(dev, ino, js.offset, mtime_ns, 0, js.tail_sha)
