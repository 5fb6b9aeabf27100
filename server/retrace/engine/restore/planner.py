"""The restore planner: a PURE function from states to a :class:`RestorePlan` (no I/O).

Inputs, per path in scope (the paths whose entries differ between target and head):
what the target has, what the head recorded, what is ACTUALLY on disk now, and provenance
(whether the latest recorded change of the path was made outside the agent, with the entry it
changed from). Rules:

* disk already equals the target → nothing to do for that path;
* target content never stored → ``unrecoverable`` (never pretended to be restored);
* nothing on disk and the target has an entry → ``create``, never a conflict, whatever the
  history says (a file the user deleted, a fresh folder on another machine): creating a file
  where nothing exists loses nothing;
* disk differs from the head record → conflict ``unrecorded`` (someone edited, nobody recorded);
* disk holds content that was never stored (over the size cap) and would be deleted or
  overwritten → conflict ``unrecorded`` too: that could never be undone;
* disk equals the head but its latest change was ``external`` → conflict ``external``;
* otherwise create / overwrite / delete / chmod; a delete and a create of the same content
  in one plan become one ``rename``.

Conflicts carry a clean 3-way merge when one exists (base = last agent-known content).
Blob and disk bytes come through the injected readers, which keeps this function table-testable.
"""

# ruff: noqa: PTH114, PTH118

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from retrace.engine.manifest import same, same_content
from retrace.engine.merge import merge3
from retrace.engine.models import (
    ConflictInfo,
    FileEntry,
    PlanCounts,
    PlannedFile,
    RestoreMode,
    RestorePlan,
    Unrecoverable,
)


@dataclass(frozen=True)
class PathState:
    target: FileEntry | None
    head: FileEntry | None
    current: FileEntry | None
    current_error: str | None = None
    """Why the current file could not be read (then ``current`` is meaningless)."""
    external: bool = False
    """The latest recorded change of this path in the head's ancestry was not the agent's."""
    base: FileEntry | None = None
    """For ``external``: the entry before that change (the merge base)."""


Intended = Literal["create", "overwrite", "delete", "chmod"]
BlobReader = Callable[[FileEntry], bytes | None]
DiskReader = Callable[[str], bytes | None]


def _intended(cur: FileEntry | None, tgt: FileEntry | None) -> Intended:
    if tgt is None:
        return "delete"
    if cur is None:
        return "create"
    if same_content(cur, tgt):
        return "chmod"
    return "overwrite"


def _merge(
    path: str,
    *,
    base: FileEntry | None,
    cur: FileEntry | None,
    tgt: FileEntry | None,
    read_blob: BlobReader,
    read_disk: DiskReader,
) -> str | None:
    if base is None or cur is None or tgt is None:
        return None
    if base.kind != "file" or cur.kind != "file" or tgt.kind != "file":
        return None
    b, t, o = read_blob(base), read_blob(tgt), read_disk(path)
    if b is None or t is None or o is None:
        return None
    return merge3(b, o, t)


def plan_restore(
    *,
    target_id: str,
    head_id: str,
    mode: RestoreMode,
    states: Mapping[str, PathState],
    read_blob: BlobReader,
    read_disk: DiskReader,
) -> RestorePlan:
    files: list[PlannedFile] = []
    unrecoverable: list[Unrecoverable] = []
    for path in sorted(states):
        s = states[path]
        if s.current_error is None and same(s.current, s.target):
            continue
        tgt = s.target
        if tgt is not None and tgt.kind == "file" and tgt.hash is None:
            unrecoverable.append(
                Unrecoverable(path=path, reason=f"content was never stored: {tgt.unstored or 'unknown'}")
            )
            continue
        intended = _intended(s.current, tgt)
        conflict: ConflictInfo | None = None
        cur = s.current
        if s.current_error is not None:
            conflict = ConflictInfo(reason="unreadable", detail=f"cannot read {path}: {s.current_error}")
        elif cur is None:
            pass  # a create where nothing exists: nothing can be lost
        elif cur is not None and cur.kind == "file" and cur.hash is None and intended != "chmod":
            # Its bytes are in no checkpoint: replacing them could never be undone.
            conflict = ConflictInfo(
                reason="unrecorded",
                detail=f"{path} holds content that was never stored ({cur.unstored or 'not stored'}): "
                f"a restore could not bring it back",
            )
        elif not same(s.current, s.head):
            conflict = ConflictInfo(
                reason="unrecorded",
                detail=f"{path} was changed on disk after the last checkpoint and nobody recorded it",
                merged_text=_merge(
                    path, base=s.head, cur=s.current, tgt=tgt, read_blob=read_blob, read_disk=read_disk
                ),
            )
        elif s.external:
            conflict = ConflictInfo(
                reason="external",
                detail=f"the latest change to {path} was made outside the agent",
                merged_text=_merge(
                    path, base=s.base, cur=s.current, tgt=tgt, read_blob=read_blob, read_disk=read_disk
                ),
            )
        if conflict is not None:
            files.append(
                PlannedFile(
                    path=path,
                    action="conflict",
                    current=s.current,
                    target=tgt,
                    conflict=conflict,
                    intended=intended,
                )
            )
        else:
            files.append(PlannedFile(path=path, action=intended, current=s.current, target=tgt))
    files = _pair_renames(files)
    counts = PlanCounts()
    for f in files:
        setattr(counts, f.action, getattr(counts, f.action) + 1)
    return RestorePlan(
        target_id=target_id,
        head_id=head_id,
        mode=mode,
        files=files,
        counts=counts,
        unrecoverable=unrecoverable,
    )


def _pair_renames(files: list[PlannedFile]) -> list[PlannedFile]:
    deletes = {f.path: f for f in files if f.action == "delete" and f.current is not None}
    if not deletes:
        return files
    by_content: dict[tuple[str, str | None, str | None], list[str]] = {}
    for p, f in deletes.items():
        assert f.current is not None
        by_content.setdefault((f.current.kind, f.current.hash, f.current.target), []).append(p)
    used: set[str] = set()
    out: list[PlannedFile] = []
    for f in files:
        if f.action == "create" and f.target is not None:
            key = (f.target.kind, f.target.hash, f.target.target)
            if f.target.hash is not None:
                cands = [p for p in by_content.get(key, []) if p not in used]
                if cands:
                    src = cands[0]
                    used.add(src)
                    out.append(
                        PlannedFile(
                            path=f.path,
                            action="rename",
                            from_path=src,
                            current=None,
                            target=f.target,
                        )
                    )
                    continue
        out.append(f)
    return [f for f in out if not (f.action == "delete" and f.path in used)]


def dir_emptied_by(
    workspace: str | os.PathLike[str],
    rel_dir: str,
    scope: Iterable[str],
    targets: Mapping[str, FileEntry | None],
) -> bool:
    """Whether every entry below directory ``rel_dir`` is a path the plan deletes (then the
    directory disappears with them and a file or link can take its place without a conflict).
    Reads directory listings only; a symlinked subdirectory counts as an entry, never followed."""
    deleted = {p for p in scope if p.startswith(rel_dir + "/") and targets.get(p) is None}
    holders = {p.rsplit("/", i)[0] for p in deleted for i in range(1, p.count("/") + 1)}
    root = os.path.join(workspace, rel_dir)
    for dirpath, dirnames, filenames in os.walk(root):
        here = os.path.relpath(dirpath, workspace).replace(os.sep, "/")
        if here not in holders:
            return False  # a directory the deletes do not empty (e.g. an empty one) stays
        names = list(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), workspace).replace(os.sep, "/")
            if rel not in deleted:
                return False
    return True
