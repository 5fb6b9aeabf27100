"""Per-file history: the checkpoints that changed one workspace file, newest first, paged.

Shared by the server (``retrace/file/history``) and the CLI (``retrace log --path``).

Contracts:

- The path is validated by the one "inside the workspace" rule (:func:`normalize_rel`); a path
  outside it is :class:`PathOutsideWorkspace`. A path no checkpoint ever touched has an empty
  history (not an error): it may simply be new.
- A checkpoint is listed when it changed the file's entry (content, kind, executable bit, link
  target), deleted it, or renamed it here or away. The version it shows is the file right after
  that checkpoint, named by its content hash.
- Cost: O(checkpoints that named the path), not O(checkpoints) nor O(files × checkpoints). The
  path index (:mod:`retrace.app.path_index`, grown incrementally from each checkpoint's own
  delta) gives the candidates; the delta says what the path held right after it, so no manifest
  is rebuilt; only a checkpoint without a delta (the store's first baseline, whose snapshot is its
  whole manifest) is looked up through the engine, once per query that reaches it. Line
  statistics are the ones recorded with the checkpoint.
- Paging: ``nextCursor`` is the id of the last listed checkpoint; the next page continues right
  before it in commit order, so pages never repeat or skip a version even when checkpoints are
  added meanwhile (new ones appear on a fresh first page).
"""

from __future__ import annotations

from retrace.app.path_index import PathIndex, index_of
from retrace.app.timeline.describe import describe
from retrace.engine import Engine
from retrace.engine.errors import PathOutsideWorkspace, RetraceError, StoreCorrupt, UnknownCheckpoint
from retrace.engine.manifest import Delta, same
from retrace.engine.models import Checkpoint, FileChange, FileEntry
from retrace.engine.workspace import EscapeError, normalize_rel
from retrace.protocol.file_history import (
    FileChangeKind,
    FileHistoryParams,
    FileHistoryResult,
    FileVersion,
)

_STATUS_KIND: dict[str, FileChangeKind] = {
    "added": "created",
    "modified": "modified",
    "deleted": "deleted",
    "renamed": "renamed",
}


def normalise_path(engine: Engine, path: str) -> str:
    """``path`` as the workspace-relative path the engine records, or :class:`PathOutsideWorkspace`."""
    try:
        return normalize_rel(path, engine.workspace)
    except EscapeError:
        raise PathOutsideWorkspace(path[:200]) from None


def file_history(engine: Engine, params: FileHistoryParams) -> FileHistoryResult:
    """One page of the history of ``params.path`` (see the module's contracts)."""
    path = normalise_path(engine, params.path)
    history = engine.history
    index = index_of(history)
    session = params.session_id
    if session is not None and session not in index.sessions and session not in engine.sessions():
        raise RetraceError(f"unknown session id {session[:100]!r}")
    before = _before(index, params.cursor)
    versions: list[FileVersion] = []
    next_cursor: str | None = None
    order, deltas, cps = history.order, history.deltas, history.cps
    for i in index.candidates(path, before):
        cp = cps[order[i]]
        if params.session_id is not None and cp.session_id != params.session_id:
            continue
        version = _version(engine, cp, deltas.get(cp.id), path)
        if version is None:
            continue
        if len(versions) == params.limit:
            next_cursor = versions[-1].checkpoint_id
            break
        versions.append(version)
    return FileHistoryResult(path=path, versions=versions, next_cursor=next_cursor)


def _before(index: PathIndex, cursor: str | None) -> int:
    """Position (in commit order) the page starts below: the end, or the cursor's checkpoint."""
    if cursor is None:
        return index.count
    position = index.position.get(cursor)
    if position is None:
        raise UnknownCheckpoint(cursor[:100], "the history cursor is no longer in the store")
    return position


def _listed_change(cp: Checkpoint, path: str) -> FileChange | None:
    """The change the checkpoint lists for ``path`` (as the file itself or as a rename's source)."""
    return next((f for f in cp.files if path in (f.path, f.old_path)), None)


def _entries(engine: Engine, cid: str | None, path: str) -> FileEntry | None:
    if cid is None:
        return None
    try:
        return engine.entries_at(cid, [path])[path]
    except StoreCorrupt:
        return None


def _version(engine: Engine, cp: Checkpoint, delta: Delta | None, path: str) -> FileVersion | None:
    """The file's version at ``cp`` when ``cp`` changed it, else ``None``."""
    if delta is not None and path not in delta:
        return None
    change = _listed_change(cp, path)
    if delta is None and change is None and cp.parent is not None:
        return None  # no delta kept for it (a damaged line) and it lists no change to the file
    entry = delta[path] if delta is not None else _entries(engine, cp.id, path)
    if change is None:
        before = _entries(engine, cp.parent, path)
        if same(before, entry):
            return None
        kind: FileChangeKind = "created" if before is None else "deleted" if entry is None else "modified"
        change = FileChange(path=path, status="added" if kind == "created" else kind, approximate=True)
    else:
        kind = _STATUS_KIND[change.status]
    return _make_version(cp, change, kind, entry, path)


def _make_version(
    cp: Checkpoint, change: FileChange, kind: FileChangeKind, entry: FileEntry | None, path: str
) -> FileVersion:
    renamed_to = change.path if kind == "renamed" and change.path != path else None
    renamed_from = change.old_path if kind == "renamed" and renamed_to is None else None
    counted = (
        kind != "renamed"
        and change.counted
        and not change.binary
        and not (change.approximate and change.additions == 0 and change.deletions == 0)
    )
    title, _ = describe(cp, None, {})
    return FileVersion(
        checkpoint_id=cp.id,
        parent_id=cp.parent,
        session_id=cp.session_id,
        created_at=cp.created_at,
        kind=cp.kind,
        title=title,
        summary=_summary(kind, change, counted, renamed_from, renamed_to),
        change=kind,
        renamed_from=renamed_from,
        renamed_to=renamed_to,
        exists=entry is not None,
        hash=entry.hash if entry is not None else None,
        additions=change.additions if counted else None,
        deletions=change.deletions if counted else None,
        binary=change.binary,
        approximate=change.approximate,
    )


def _summary(
    kind: FileChangeKind, change: FileChange, counted: bool, renamed_from: str | None, renamed_to: str | None
) -> str:
    """This file's change in a few words."""
    if renamed_from is not None:
        return f"renamed from {renamed_from}"
    if renamed_to is not None:
        return f"renamed to {renamed_to}"
    stats = f"+{change.additions} −{change.deletions}" if counted else ""
    if change.binary:
        stats = "binary"
    if counted and change.approximate:
        stats += " (approximate)"
    if kind == "modified":
        return stats
    return f"{kind}, {stats}" if stats else kind
