"""``retrace verify --repair``: move damaged pieces of a store into ``quarantine/`` (never delete
them) and rebuild what can be rebuilt.

Under the store's writer lock (a running server must be stopped first):

* damaged journal lines: the whole original journal is copied to the quarantine, the bad lines
  are listed there with their locations, and the journal is rewritten without them (atomically);
* lines holding paths that are not workspace paths (:mod:`retrace.engine.history.sanitize`): the
  original line is kept in the quarantine and the journal holds it cleaned — those paths dropped,
  the checkpoint listing them as unrecoverable — (a restore intent naming one is quarantined
  whole);
* damaged loose blobs are moved to the quarantine; a pack holding a damaged blob is copied there
  and rewritten with its intact blobs only;
* a damaged blob whose exact bytes are still in the workspace (same hash) is stored again;
* the stat cache (an index of file hashes) is moved aside, so the next open re-reads every file.

Checkpoints whose manifest is still gone after that (their journal data is lost and no other
line holds a copy) are recorded in their session's journal as known losses (``checkpointLost``):
they stay listed as unrecoverable with the reason, and verify no longer counts them as damage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from retrace.engine.capture.fs import read_regular
from retrace.engine.errors import RetraceError
from retrace.engine.history.replay import BadLine, BadPath
from retrace.engine.history.sanitize import sanitized
from retrace.engine.manifest import stored_delta
from retrace.engine.models import Checkpoint, VerifyReport
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import CheckpointEvent, CheckpointLostEvent, model_of
from retrace.engine.store.journal import JournalWriter, reencode
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.lock import StoreLock
from retrace.engine.store.seal import SUM_KEY, verify_line
from retrace.engine.verify import Findings, verify_store


def repair_store(layout: StoreLayout) -> VerifyReport:
    lock = StoreLock(layout.lock)
    lock.acquire()
    try:
        found = verify_store(layout, quick=False)
        if found.report.ok:
            return found.report
        qdir = layout.root / "quarantine" / time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        qdir.mkdir(parents=True, exist_ok=True)
        actions: list[str] = []
        # Cleaning keeps every line's number (a removed line becomes blank): then the damaged
        # lines' numbers still hold for their quarantine.
        actions += _clean_paths(found.replayed.bad_paths, qdir)
        actions += _quarantine_lines(found.replayed.bad_lines, qdir)
        actions += _quarantine_blobs(layout, found, qdir)
        actions += _restore_from_workspace(layout, found)
        actions += _rebuild_indexes(layout, qdir)
        actions += _record_losses(layout, verify_store(layout, quick=False))
        after = verify_store(layout, quick=False).report
        return after.model_copy(update={"repaired": actions, "quarantine": str(qdir)})
    finally:
        lock.release()


def _fsync_replace(tmp: Path, dest: Path) -> None:
    with tmp.open("rb+") as f:
        os.fsync(f.fileno())
    tmp.replace(dest)


def _quarantine_lines(bad: list[BadLine], qdir: Path) -> list[str]:
    actions: list[str] = []
    by_path: dict[Path, set[int]] = {}
    for b in bad:
        by_path.setdefault(b.path, set()).add(b.number)
    for n, (path, numbers) in enumerate(sorted(by_path.items())):
        keep_dir = qdir / "journals"
        keep_dir.mkdir(exist_ok=True)
        copy = keep_dir / f"{n:03d}-{path.parent.name}-journal.jsonl"
        shutil.copy2(path, copy)
        lines = path.read_bytes().split(b"\n")
        with (qdir / "bad-lines.txt").open("ab") as out:
            for i in sorted(numbers):
                out.write(f"{path}:{i}: ".encode() + lines[i - 1] + b"\n")
        kept = [ln for i, ln in enumerate(lines, 1) if i not in numbers and ln.strip()]
        tmp = path.with_name(path.name + ".repair.tmp")
        tmp.write_bytes(b"".join(ln + b"\n" for ln in kept))
        _fsync_replace(tmp, path)
        actions.append(
            f"{path}: {len(numbers)} damaged line(s) moved to {copy.parent} (original kept as {copy})"
        )
    return actions


def _cleaned(raw: bytes) -> bytes | None:
    """Line ``raw`` without the paths that fail the workspace rule, in its own format (sealed or
    legacy); ``None``: nothing of it can stay (a restore intent naming such a path)."""
    ev: dict[str, Any] = json.loads(raw)
    ev.pop(SUM_KEY, None)
    if model_of(ev) is not CheckpointEvent:
        return None
    bad: list[tuple[str, str]] = []
    if isinstance(ev.get("delta"), dict):
        kept, bad = stored_delta(ev["delta"])
        ev["delta"] = {p: e for p, e in ev["delta"].items() if p in kept}
    copy = ev.get("parentDelta")
    if isinstance(copy, dict) and isinstance(copy.get("delta"), dict) and stored_delta(copy["delta"])[1]:
        ev.pop("parentDelta")  # only redundancy: a copy holding such a path is not kept
    cp, _ = sanitized(Checkpoint.model_validate(ev["checkpoint"]), bad)
    ev["checkpoint"] = cp.model_dump(mode="json", by_alias=True, exclude={"damage"})
    return reencode(ev, sealed=verify_line(raw))


def _clean_paths(bad: list[BadPath], qdir: Path) -> list[str]:
    """Rewrite every line a path was dropped from (the original kept in the quarantine)."""
    by_path: dict[Path, set[int]] = {}
    for b in bad:
        by_path.setdefault(b.path, set()).add(b.number)
    actions: list[str] = []
    for n, (path, numbers) in enumerate(sorted(by_path.items())):
        (qdir / "journals").mkdir(exist_ok=True)
        copy = qdir / "journals" / f"paths-{n:03d}-{path.parent.name}-journal.jsonl"
        shutil.copy2(path, copy)
        lines = path.read_bytes().split(b"\n")
        with (qdir / "bad-lines.txt").open("ab") as out:
            for i in sorted(numbers):
                out.write(f"{path}:{i}: ".encode() + lines[i - 1] + b"\n")
                lines[i - 1] = _cleaned(lines[i - 1]) or b""
        tmp = path.with_name(path.name + ".repair.tmp")
        tmp.write_bytes(b"\n".join(lines))
        _fsync_replace(tmp, path)
        actions.append(
            f"{path}: {len(numbers)} line(s) naming paths outside the workspace cleaned "
            f"(originals kept in {copy} and {qdir / 'bad-lines.txt'})"
        )
    return actions


def _quarantine_blobs(layout: StoreLayout, found: Findings, qdir: Path) -> list[str]:
    blobs = BlobStore(layout.blobs)
    actions: list[str] = []
    packs: set[str] = set()
    for bid in sorted(found.bad_blobs):
        if bid not in found.stored:
            continue  # missing: nothing to move
        loose = blobs.path(bid)
        if loose.exists():
            (qdir / "blobs").mkdir(exist_ok=True)
            shutil.move(loose, qdir / "blobs" / bid)
            actions.append(f"blob {bid} ({found.bad_blobs[bid]}) moved to {qdir / 'blobs'}")
        pack = blobs.pack_of(bid)
        if pack is not None:
            packs.add(pack)
            blobs.remove(bid)
            actions.append(f"blob {bid} ({found.bad_blobs[bid]}) dropped from {Path(pack).name}")
    for pack in sorted(packs):
        (qdir / "packs").mkdir(exist_ok=True)
        for src in (Path(pack), Path(pack[:-5] + ".idx")):
            if src.exists():
                shutil.copy2(src, qdir / "packs" / src.name)
        actions.append(f"pack {Path(pack).name} copied to {qdir / 'packs'} before rewriting")
    blobs.compact_packs()
    return actions


def _restore_from_workspace(layout: StoreLayout, found: Findings) -> list[str]:
    """Store again every damaged blob whose exact bytes a workspace file still holds."""
    history = found.history
    usable = [c for c in history.order if c not in history.damage]
    if not usable or not found.bad_blobs:
        return []
    workspace = Path(str(layout.read_meta().get("workspace", "")))
    try:
        head = history.manifest_at(usable[-1])
    except RetraceError:  # best effort: the report after repair says what stays damaged
        return []
    blobs = BlobStore(layout.blobs)
    actions: list[str] = []
    for path, e in sorted(head.items()):
        if e.kind != "file" or e.hash is None or e.hash not in found.bad_blobs:
            continue
        try:
            data = read_regular(str(workspace / path))  # never blocks on a FIFO
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() == e.hash and blobs.check(e.hash) is not None:
            blobs.put(data, e.hash)
            actions.append(f"blob {e.hash} stored again from the workspace file {path}")
    return actions


def _rebuild_indexes(layout: StoreLayout, qdir: Path) -> list[str]:
    if not layout.stat_cache.exists():
        return []
    shutil.move(layout.stat_cache, qdir / layout.stat_cache.name)
    return [f"stat cache moved to {qdir} (rebuilt on the next open, every file is re-read)"]


def _record_losses(layout: StoreLayout, found: Findings) -> list[str]:
    """Append a ``checkpointLost`` event for every checkpoint whose whole manifest is lost."""
    history = found.history
    by_session: dict[str, list[CheckpointLostEvent]] = {}
    for cid in history.order:
        reason = history.damage.get(cid)
        if reason is None or cid in found.replayed.known_lost:
            continue
        sid = history.cps[cid].session_id
        by_session.setdefault(sid, []).append(CheckpointLostEvent(id=cid, reason=reason))
    actions: list[str] = []
    for sid, events in sorted(by_session.items()):
        writer = JournalWriter(layout.journal(sid))
        try:
            for ev in events:
                writer.append(ev)
                actions.append(f"checkpoint {ev.id} recorded as lost: {ev.reason}")
        finally:
            writer.close()
    return actions
