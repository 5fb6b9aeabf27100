"""What an opened or pulled journal says, read one segment at a time (pure).

A journal from a bucket is untrusted input: whoever can write the bucket wrote it. Before any of
it reaches the local store, :class:`JournalScan` reads each checkpoint line for the checkpoint
ids and parents (to find the sessions a journal builds on) and for every workspace path it
names — the delta's keys, the parent delta's keys, the changed files (``path``, ``oldPath``) and
the unrecoverable ones — and checks each one by the workspace-path rule
(:func:`retrace.engine.workspace.normalize_rel`, POSIX form: stored paths are always ``/``
-separated) plus the capture rule that no component is ``.git``. A path that fails is named in
:attr:`JournalScan.unsafe`; the caller refuses the journal (the paths inside manifest snapshots
are blobs, checked by the engine when it replays them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from retrace.engine.store.events import CheckpointEvent, model_of
from retrace.engine.workspace import EscapeError, normalize_rel

UNSAFE_SHOWN = 3
"""How many unsafe paths an error names (the rest are counted)."""


def path_problem(path: object) -> str | None:
    """Why ``path`` (from a stored checkpoint) cannot name a workspace entry, or ``None``."""
    if not isinstance(path, str):
        return "not a string"
    try:
        norm = normalize_rel(path, windows=False)
    except EscapeError:
        return "outside the workspace"
    if norm != path:
        return "not in the form Retrace stores"
    if any(part.casefold() == ".git" for part in norm.split("/")):
        return "inside .git"
    return None


def _paths(event: dict[str, Any]) -> Iterator[object]:
    cp = event.get("checkpoint")
    if isinstance(cp, dict):
        for key in ("files", "unrecoverable"):
            for item in cp.get(key) or ():
                if isinstance(item, dict):
                    yield item.get("path")
                    if item.get("oldPath") is not None:
                        yield item.get("oldPath")
    for holder in (event, event.get("parentDelta")):
        delta = holder.get("delta") if isinstance(holder, dict) else None
        if isinstance(delta, dict):
            yield from delta


@dataclass
class JournalScan:
    """Accumulates what the segments of one journal say (feed them in order)."""

    ids: set[str] = field(default_factory=set)
    parents: set[str] = field(default_factory=set)
    checkpoints: int = 0
    unsafe: list[str] = field(default_factory=list)
    """``'<path>' in checkpoint <id>: <why>`` for every path that fails the rule."""

    def feed(self, data: bytes) -> None:
        for line in data.splitlines():
            if b'"checkpoint"' in line:
                self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            ev = json.loads(line)
        except ValueError:
            return  # not a checkpoint the engine could replay either: damage it reports
        if not isinstance(ev, dict) or model_of(ev) is not CheckpointEvent:
            return
        cp = ev.get("checkpoint")
        cid = cp.get("id") if isinstance(cp, dict) else None
        if isinstance(cid, str):
            self.checkpoints += 1
            self.ids.add(cid)
            if isinstance(cp, dict) and isinstance(cp.get("parent"), str):
                self.parents.add(cp["parent"])
        for path in _paths(ev):
            problem = path_problem(path)
            if problem is not None:
                self.unsafe.append(f"{path!r} in checkpoint {cid}: {problem}")

    def unsafe_summary(self) -> str:
        shown = "; ".join(self.unsafe[:UNSAFE_SHOWN])
        more = len(self.unsafe) - UNSAFE_SHOWN
        return shown + (f" (and {more} more)" if more > 0 else "")
