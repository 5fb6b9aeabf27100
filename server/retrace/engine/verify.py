"""``retrace verify``: check every journal line, manifest and blob of a store, and say which
checkpoints the damage affects.

Works on the files alone (a fresh replay, its own blob reader): it needs no engine and no lock,
so it can run next to a live server. ``quick`` skips reading blobs (journals + blob presence:
what the server runs in the background at start); the full check hashes every stored blob and
decodes every manifest snapshot. Checkpoints an earlier repair recorded as lost are still listed
among the affected ones (information) but do not make the report fail. Repair lives in
:mod:`retrace.engine.repair`.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

from retrace.engine.errors import RetraceError
from retrace.engine.history import History, replay
from retrace.engine.history.replay import ReplayReport
from retrace.engine.manifest import Manifest
from retrace.engine.models import AffectedCheckpoint, StoreDamage, VerifyReport
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.layout import StoreLayout


@dataclass
class Findings:
    """Verification results with what repair needs (the replayed history, bad blob ids)."""

    report: VerifyReport
    history: History
    replayed: ReplayReport
    bad_blobs: dict[str, str] = field(default_factory=dict)
    """Damaged or missing blob id → reason."""
    stored: set[str] = field(default_factory=set)


def verify_store(layout: StoreLayout, *, quick: bool = False, remote: Set[str] = frozenset()) -> Findings:
    """``remote``: blob ids a configured remote holds; referenced blobs stored only there are
    counted as remote (``remoteBlobs``), not as damage."""
    layout.read_meta()
    blobs = BlobStore(layout.blobs)
    stored = set(blobs.ids())
    history = History(blobs)
    replayed = replay(layout, history, stored | remote)
    damage = [
        StoreDamage(
            kind="checksum" if b.checksum else "checkpointEntry" if b.malformed_checkpoint else "journalLine",
            where=f"{b.path}:{b.number}",
            reason=b.reason,
            checkpoint_id=b.checkpoint_id,
        )
        for b in replayed.bad_lines
    ]
    damage += [
        StoreDamage(
            kind="path",
            where=f"{b.path}:{b.number}",
            reason=f"{b.reason}: ignored, nothing is restored there",
            checkpoint_id=b.checkpoint_id,
        )
        for b in replayed.bad_paths
    ]
    bad = _bad_blobs(history, blobs, stored, quick)
    remote_only = {bid for bid in bad if bid in remote and bid not in stored}
    remote_only |= {snap for snap in history.snapshots.values() if snap in remote and snap not in stored}
    bad = {bid: reason for bid, reason in bad.items() if bid not in remote_only}
    for bid, reason in sorted(bad.items()):
        damage.append(StoreDamage(kind="blob", where=bid, reason=reason))
    affected = _affected(history, bad, damage, quick, remote_only)
    affected += _path_affected(replayed, {a.id for a in affected})
    unknown = [a for a in affected if a.id not in replayed.known_lost]
    report = VerifyReport(
        ok=not damage and not unknown,
        quick=quick,
        journal_lines=replayed.lines,
        checkpoints=len(history.order),
        blobs=len(stored),
        remote_blobs=len(remote_only),
        damage=damage,
        affected=affected,
    )
    return Findings(report, history, replayed, bad, stored)


def _path_affected(replayed: ReplayReport, listed: set[str]) -> list[AffectedCheckpoint]:
    """Checkpoints a path in their journal line was dropped from (the rest still restores)."""
    paths: dict[str, list[str]] = {}
    for b in replayed.bad_paths:
        if b.checkpoint_id is not None and b.checkpoint_id not in listed:
            paths.setdefault(b.checkpoint_id, []).append(
                b.stored if b.stored.isprintable() else repr(b.stored)
            )
    return [
        AffectedCheckpoint(
            id=cid,
            reason=f"{len(bad)} stored path(s) are not inside the workspace and are ignored: "
            + ", ".join(bad[:5]),
            paths=bad,
        )
        for cid, bad in sorted(paths.items())
    ]


def _bad_blobs(history: History, blobs: BlobStore, stored: set[str], quick: bool) -> dict[str, str]:
    bad: dict[str, str] = {}
    for cid in history.order:
        for bid in history.referenced_blobs(cid):
            if bid not in stored:
                bad[bid] = "missing from the store"
    if not quick:
        for bid in sorted(stored):
            reason = blobs.check(bid)
            if reason is not None:
                bad[bid] = reason
    return bad


def _affected(
    history: History,
    bad: dict[str, str],
    damage: list[StoreDamage],
    quick: bool,
    remote_only: Set[str] = frozenset(),
) -> list[AffectedCheckpoint]:
    """Walk checkpoints in order, tracking per checkpoint only its paths whose blob is bad."""
    out: list[AffectedCheckpoint] = []
    bad_paths: dict[str, dict[str, str]] = {}
    for cid in history.order:
        reason = history.damage.get(cid) or _snapshot_damage(
            history, cid, bad, damage, quick or history.snapshots.get(cid) in remote_only
        )
        if reason is not None:
            history.mark_damaged(cid, reason)
            out.append(AffectedCheckpoint(id=cid, reason=reason))
            continue
        mine = _bad_paths(history, cid, bad, bad_paths, quick)
        if mine:
            bad_paths[cid] = mine
            shown = ", ".join(sorted(mine)[:5]) + (" …" if len(mine) > 5 else "")
            out.append(
                AffectedCheckpoint(
                    id=cid,
                    reason=f"stored content of {len(mine)} file(s) is damaged: {shown}",
                    paths=sorted(mine),
                )
            )
    return out


def _snapshot_damage(
    history: History, cid: str, bad: dict[str, str], damage: list[StoreDamage], quick: bool
) -> str | None:
    parent = history.cps[cid].parent
    snap = history.snapshots.get(cid)
    if snap is None:
        return f"it depends on damaged checkpoint {parent}" if parent in history.damage else None
    if snap in bad:
        return f"its manifest snapshot {snap} is damaged: {bad[snap]}"
    if quick:
        return None
    try:
        history.snapshot(snap)
    except (RetraceError, ValueError, KeyError, TypeError) as exc:
        damage.append(StoreDamage(kind="snapshot", where=snap, reason=str(exc), checkpoint_id=cid))
        return f"its manifest snapshot {snap} cannot be decoded"
    return None


def _bad_paths(
    history: History, cid: str, bad: dict[str, str], known: dict[str, dict[str, str]], quick: bool
) -> dict[str, str]:
    """path → bad blob id for the files of ``cid`` whose stored content is damaged."""
    if not bad:
        return {}
    snap = history.snapshots.get(cid)
    mine: dict[str, str]
    if snap is not None:
        manifest: Manifest = {} if quick else history.snapshot(snap)
        mine = {p: e.hash for p, e in manifest.items() if e.kind == "file" and e.hash in bad}
    else:
        mine = dict(known.get(history.cps[cid].parent or "", {}))
    for p, e in (history.deltas.get(cid) or {}).items():
        if e is not None and e.kind == "file" and e.hash in bad:
            mine[p] = e.hash
        else:
            mine.pop(p, None)
    return mine
