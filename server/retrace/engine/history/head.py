"""Choosing the head after a replay: the newest of this store's own checkpoints whose manifest
can be rebuilt, its provenance (which checkpoint last changed each path), and the missing-blob
report.

The head is what this workspace matches: the last checkpoint this store committed (newest by
local creation number, :mod:`.origin`). A checkpoint from another machine (an opened session)
is never the head, however new its id or time: restoring it commits a local ``restore``
checkpoint, which is. A store with no usable local checkpoint has no head (a writer then takes
a baseline of the workspace)."""

from __future__ import annotations

from retrace.engine.errors import StoreCorrupt
from retrace.engine.history.graph import History


def settle_head(history: History, present: set[str]) -> list[str]:
    """Set ``history.head``/``head_id``/``prov`` from the replayed graph; returns the problems
    found (damaged heads skipped, blobs missing from the store). ``present``: stored blob ids."""
    problems: list[str] = []
    local = history.local
    usable = [cid for cid in history.order if cid in local and cid not in history.damage]
    usable.sort(key=local.__getitem__)  # newest local last (the order puts parents first)
    while usable:
        head_id = usable.pop()
        try:
            history.head = dict(history.manifest_at(head_id))
        except StoreCorrupt as exc:
            history.mark_damaged(head_id, str(exc))
            problems.append(f"checkpoint {head_id}: {exc}")
            continue
        history.head_id = head_id
        break
    if history.head_id is not None:
        rebuild_provenance(history)
        problems += _missing_blobs(history, present)
    return problems


def rebuild_provenance(history: History) -> None:
    """path → the checkpoint in the head's ancestry with its latest change."""
    history.prov = {}
    for cid in history.ancestry(history.head_id):
        d = history.deltas.get(cid)
        if d is None:
            continue
        for p in d:
            history.prov.setdefault(p, cid)


def _missing_blobs(history: History, present: set[str]) -> list[str]:
    problems: list[str] = []
    missing = {e.hash for e in history.head.values() if e.hash and e.kind == "file"} - present
    if missing:
        problems.append(
            f"{len(missing)} blob(s) referenced by head {history.head_id} are missing from the store"
        )
    broken = [cid for cid in history.order if any(b not in present for b in history.referenced_blobs(cid))]
    if broken:
        shown = ", ".join(broken[:5]) + (" …" if len(broken) > 5 else "")
        problems.append(
            f"{len(broken)} checkpoint(s) reference blobs missing from the store "
            f"(they cannot be fully restored): {shown}"
        )
    return problems
