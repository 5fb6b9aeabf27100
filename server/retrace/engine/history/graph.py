"""In-memory checkpoint graph: checkpoints, per-checkpoint deltas, manifest snapshots.

A checkpoint's full manifest is the nearest snapshot in its ancestry plus the deltas after it.
A checkpoint in ``damage`` has no trustworthy manifest (its own or an ancestor's journal data
or snapshot is damaged): asking for it raises :class:`StoreCorrupt` naming the reason, instead
of answering with a partial manifest that would read as "those files did not exist".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator

from retrace.engine.errors import StoreCorrupt
from retrace.engine.history.origin import Origins
from retrace.engine.manifest import Delta, Manifest, decode_snapshot, diff_manifests, same
from retrace.engine.models import Checkpoint, FileEntry
from retrace.engine.store.blobs import BlobStore

SNAPSHOT_CACHE = 4

_FIELD_SETS: dict[frozenset[str], set[str]] = {}


def _share_field_sets(cp: Checkpoint) -> None:
    """Give ``cp`` and its file changes one shared fields-set object per distinct set, as
    manifest entries have (:func:`~retrace.engine.manifest.make_entry`): a set of 19 names is
    ~700 bytes, half of what a checkpoint holds, times 10,000 checkpoints. Nothing reads these
    models' fields-sets (no ``exclude_unset`` dump of them)."""
    for m in (cp, *cp.files):
        fs = m.__pydantic_fields_set__
        shared = _FIELD_SETS.setdefault(frozenset(fs), fs)
        if shared is not fs:
            object.__setattr__(m, "__pydantic_fields_set__", shared)


ManifestSource = Callable[[str], Manifest]
EntriesSource = Callable[[str, Iterable[str]], dict[str, FileEntry | None]]


class History:
    """The checkpoint tree of one store. Mutated only through its methods (the engine's commit
    path appends with :meth:`add`; retention uses :meth:`drop` and :meth:`set_snapshot`)."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.cps: dict[str, Checkpoint] = {}
        self.order: list[str] = []
        """Checkpoint ids in creation order (:func:`~retrace.engine.history.order.creation_order`:
        parents first; other machines' checkpoints, then this store's in local commit order)."""
        self.local: dict[str, int] = {}
        """This store's checkpoints → their local creation number (:mod:`.origin`); every other
        checkpoint came from elsewhere and is never the head or the next one's parent."""
        self.next_seq = 0
        """The local creation number of the next commit."""
        self.origins = Origins(key=None, legacy=True)
        """The store's origin key (set by replay; a writer stamps its lines with it)."""
        self.deltas: dict[str, Delta | None] = {}
        """Per-checkpoint delta; ``None`` for a baseline (its snapshot is its whole manifest)."""
        self.snapshots: dict[str, str] = {}
        """Checkpoint id → blob id of its full-manifest snapshot (only some checkpoints)."""
        self.snap_depth: dict[str, int] = {}
        """Replay cost since the nearest snapshot in the ancestry (checkpoints + delta entries)."""
        self.head_id: str | None = None
        self.head: Manifest = {}
        """The head's manifest, kept current by the commit path."""
        self.prov: dict[str, str] = {}
        """path → id of the checkpoint with its latest change in the head's ancestry."""
        self.damage: dict[str, str] = {}
        """Checkpoint id → why it cannot be restored (see :attr:`Checkpoint.damage`)."""
        self.names: dict[str, str] = {}
        """Checkpoint id → the name a person gave it, ``""`` when removed (``checkpointName``
        events; set by replay and by :func:`retrace.engine.bookmarks.name_checkpoint`)."""
        self._snap_cache: OrderedDict[str, Manifest] = OrderedDict()

    # ------------------------------------------------------------------ mutation
    def add(
        self, cp: Checkpoint, delta: Delta | None, snapshot: str | None, depth: int, seq: int | None = None
    ) -> None:
        """Add ``cp`` last in :attr:`order`; ``seq``: its local creation number (``None``: foreign)."""
        _share_field_sets(cp)
        self.cps[cp.id] = cp
        self.order.append(cp.id)
        if seq is not None:
            self.local[cp.id] = seq
            self.next_seq = max(self.next_seq, seq + 1)
        self.deltas[cp.id] = delta
        if snapshot is not None:
            self.snapshots[cp.id] = snapshot
            self.snap_depth[cp.id] = 0
        else:
            self.snap_depth[cp.id] = depth

    def drop(self, cids: set[str]) -> None:
        """Forget checkpoints (retention); the order of the others is kept."""
        for cid in cids:
            self.cps.pop(cid, None)
            self.deltas.pop(cid, None)
            self.snapshots.pop(cid, None)
            self.snap_depth.pop(cid, None)
            self.damage.pop(cid, None)
            self.local.pop(cid, None)
        self.order[:] = [c for c in self.order if c not in cids]

    def set_snapshot(self, cid: str, snapshot: str) -> None:
        self.snapshots[cid] = snapshot
        self.snap_depth[cid] = 0

    def mark_damaged(self, cid: str, reason: str) -> None:
        """Record why ``cid`` cannot be restored and show it on the checkpoint itself."""
        self.damage.setdefault(cid, reason)
        cp = self.cps.get(cid)
        if cp is not None and cp.damage is None:
            self.cps[cid] = cp.model_copy(update={"damage": reason, "recoverability": "none"})

    # ------------------------------------------------------------------ queries
    def ancestry(self, cid: str | None) -> Iterator[str]:
        while cid is not None and cid in self.cps:
            yield cid
            cid = self.cps[cid].parent

    def referenced_blobs(self, cid: str) -> Iterator[str]:
        """Blob ids this checkpoint's own journal entry references (snapshot, delta contents)."""
        snap = self.snapshots.get(cid)
        if snap is not None:
            yield snap
        for e in (self.deltas.get(cid) or {}).values():
            if e is not None and e.kind == "file" and e.hash:
                yield e.hash

    def check_usable(self, cid: str) -> None:
        reason = self.damage.get(cid)
        if reason is not None:
            raise StoreCorrupt(f"checkpoint {cid} cannot be restored or compared: {reason}")

    def snapshot(self, sid: str) -> Manifest:
        m = self._snap_cache.get(sid)
        if m is None:
            data = self.blobs.get(sid)
            try:
                m = decode_snapshot(data)
            except (ValueError, TypeError, KeyError) as exc:  # damage (or forgery), never applied
                raise StoreCorrupt(f"manifest snapshot {sid} cannot be used: {exc}") from None
            self.remember_snapshot(sid, m, copy=False)
        else:
            self._snap_cache.move_to_end(sid)
        return m

    def remember_snapshot(self, sid: str, m: Manifest, *, copy: bool = True) -> None:
        """Cache a snapshot (a copy by default: the head manifest keeps changing)."""
        self._snap_cache[sid] = dict(m) if copy else m
        while len(self._snap_cache) > SNAPSHOT_CACHE:
            self._snap_cache.popitem(last=False)

    def manifest_at(self, cid: str) -> Manifest:
        """Full manifest of a checkpoint (a fresh dict)."""
        self.check_usable(cid)
        chain: list[str] = []
        base: Manifest | None = None
        for c in self.ancestry(cid):
            if c in self.snapshots:
                base = self.snapshot(self.snapshots[c])
                break
            chain.append(c)
        if base is None:
            raise StoreCorrupt(f"checkpoint {cid}: no manifest snapshot in its ancestry")
        m = dict(base)
        for c in reversed(chain):
            for p, e in (self.deltas.get(c) or {}).items():
                if e is None:
                    m.pop(p, None)
                else:
                    m[p] = e
        return m

    def entries_at(self, cid: str, paths: Iterable[str]) -> dict[str, FileEntry | None]:
        """Entries of ``paths`` at ``cid`` (``None``: absent), walking back only as far as needed."""
        self.check_usable(cid)
        remaining = set(paths)
        out: dict[str, FileEntry | None] = {}
        for c in self.ancestry(cid):
            if not remaining:
                break
            d = self.deltas.get(c)
            if d:
                for p in [p for p in remaining if p in d] if len(remaining) <= len(d) else list(d):
                    if p in remaining:
                        out[p] = d[p]
                        remaining.discard(p)
            if c in self.snapshots:
                snap = self.snapshot(self.snapshots[c])
                for p in remaining:
                    out[p] = snap.get(p)
                remaining = set()
                break
        if remaining:
            raise StoreCorrupt(f"checkpoint {cid}: no manifest snapshot in its ancestry")
        return out

    def changed_between(
        self,
        a: str,
        b: str,
        manifest_at: ManifestSource | None = None,
        entries_at: EntriesSource | None = None,
    ) -> set[str]:
        """Paths whose entries differ between checkpoints ``a`` and ``b``. ``manifest_at`` /
        ``entries_at`` let the engine answer for its head from memory."""
        if a == b:
            return set()
        self.check_usable(a)
        self.check_usable(b)
        full_of = manifest_at or self.manifest_at
        some_of = entries_at or self.entries_at
        anc_a = list(self.ancestry(a))
        set_a = set(anc_a)
        path_b: list[str] = []
        lca: str | None = None
        for c in self.ancestry(b):
            if c in set_a:
                lca = c
                break
            path_b.append(c)
        path_a = anc_a[: anc_a.index(lca)] if lca is not None else anc_a
        cands: set[str] = set()
        full = lca is None
        for c in path_a + path_b:
            d = self.deltas.get(c)
            if d is None:
                full = True
                break
            cands.update(d)
        if full:
            return set(diff_manifests(full_of(a), full_of(b)))
        ea = some_of(a, cands)
        eb = some_of(b, cands)
        return {p for p in cands if not same(ea[p], eb[p])}
