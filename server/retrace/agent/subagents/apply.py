"""A child's net change merged into the parent's workspace (the I/O around :mod:`.merge`).

:func:`net_change` reads, from the child's own store, every path that differs between the
child's first checkpoint (the copy of the parent state it started from) and its last one.
:func:`merge_into` then decides each path against the parent's file on disk now and writes what
the rules allow through the one workspace writer that restores use too (links are links: a
link the child deleted, replaced or re-pointed is deleted, replaced or re-pointed itself, never
its target; no ``.git``; nothing outside the workspace; nothing unsaved in the editor; in a
multi-root workspace, nothing under another folder's name: the child's copy is the first folder's).
Conflicts are returned, never resolved: the parent's file is left exactly as it was.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from retrace.agent.folders import route
from retrace.agent.subagents.merge import MergeStep, Version, decide
from retrace.agent.tools.base import ToolContext
from retrace.engine.engine import Engine
from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry
from retrace.engine.restore.disk import apply_disk
from retrace.engine.restore.ops import DiskOp, Seen
from retrace.engine.store.blobs import blob_id
from retrace.engine.workspace import DirTree, EscapeError, Identity, check_rel, normalize_rel

Change = tuple[Version | None, Version | None]
"""(base, theirs) of one path."""


@dataclass
class NetChange:
    changes: dict[str, Change] = field(default_factory=dict)
    unstored: list[str] = field(default_factory=list)
    """Paths the child changed whose new content its store could not keep (too big)."""


@dataclass
class MergeOutcome:
    written: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    """Of ``written``: the paths where both sides' edits were combined."""
    conflicts: list[MergeStep] = field(default_factory=list)


def conflict_list(merged: MergeOutcome | None) -> list[dict[str, str]]:
    """The conflicts of a merge as the journal, the checkpoint meta and the protocol carry them."""
    return [{"path": c.path, "reason": c.reason} for c in (merged.conflicts if merged else [])]


def _same(a: FileEntry | None, b: FileEntry | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.kind, a.hash, a.executable, a.target) == (b.kind, b.hash, b.executable, b.target)


def _version(engine: Engine, entry: FileEntry | None) -> Version | None:
    if entry is None:
        return None
    if entry.kind == "symlink":
        return Version((entry.target or "").encode("utf-8", "surrogateescape"), link=True)
    data = engine.content(entry)
    if data is None:
        raise LookupError(entry.unstored or "content not stored")
    return Version(data, entry.executable)


def net_change(child: Engine, start_id: str) -> NetChange:
    """What the child changed since checkpoint ``start_id`` (runs on the child engine's thread)."""
    before, after = child.manifest(start_id), child.manifest(child.head.id)
    out = NetChange()
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if _same(old, new):
            continue
        try:
            out.changes[path] = (_version(child, old), _version(child, new))
        except LookupError:
            out.unstored.append(path)
    return out


def _ours(tree: DirTree, rel: str) -> tuple[Version | None, Seen]:
    """The parent's current version of ``rel`` and what the writer must find there when it
    writes (the entry and its stat identity: a compare-and-swap guard). Never follows a link:
    a link is read as a link, and a path whose parent is a link or a file holds nothing of the
    workspace. ``LookupError`` when it is neither a file, a symbolic link nor absent."""
    try:
        st = tree.lstat(rel)
    except (NotADirectoryError, EscapeError):
        return None, Seen(None)  # behind a link or a file (names were checked by the caller)
    if st is None:
        return None, Seen(None)
    fd, name = tree.parent(rel)
    if stat.S_ISLNK(st.st_mode):
        target = tree.fs.readlink(fd, name)
        raw = os.fsencode(target)
        entry = make_entry("symlink", blob_id(raw), len(raw), target=target)
        return Version(raw, link=True), Seen(entry, Identity.of(st))
    if not stat.S_ISREG(st.st_mode):
        raise LookupError("something that is not a file is in the way here")
    ffd = tree.fs.open_file(fd, name)
    try:
        if Identity.of(os.fstat(ffd)) != Identity.of(st):
            raise LookupError("it changed while the merge read it")
        data = b"".join(iter(lambda: os.read(ffd, 1 << 20), b""))
    finally:
        os.close(ffd)
    executable = bool(st.st_mode & 0o111)
    entry = make_entry("file", blob_id(data), len(data), executable=executable)
    return Version(data, executable), Seen(entry, Identity.of(st))


def _op(rel: str, step: MergeStep, seen: Seen) -> DiskOp:
    """The workspace writer's operation for one decided step (a link stays a link)."""
    version = step.version
    if step.kind == "delete" or version is None:
        return DiskOp(rel, "delete", None, seen)
    data = version.data
    if version.link:
        target = os.fsdecode(data)
        return DiskOp(rel, "write", make_entry("symlink", blob_id(data), len(data), target=target), seen)
    entry = make_entry("file", blob_id(data), len(data), executable=version.executable)
    return DiskOp(rel, "write", entry, seen, source=lambda: data)


def _plain(rel: str) -> str | None:
    """Why ``rel`` (from the child's store: untrusted) is not a plain workspace path, else None."""
    try:
        if normalize_rel(rel) != rel:
            return "not a plain path inside the workspace"
        check_rel(rel)
    except EscapeError as exc:
        return str(exc)
    return None


def _other_folder(ctx: ToolContext, rel: str) -> str | None:
    """Why ``rel`` cannot be the first folder's, in a multi-root workspace: its first component
    names another folder (how the parent reads it) and the first folder holds no entry of that
    name (so the child's copy had none: the child built it from nothing). ``None``: it is the
    first folder's (one folder: always)."""
    if len(ctx.folders) < 2:
        return None
    try:
        routed = route(ctx.folders, rel)
    except EscapeError:
        return None  # not a folder name: the plain-path rules decide
    first = ctx.folders[0]
    if routed is None or routed.folder == first:
        return None
    if os.path.lexists(ctx.workspace / rel.split("/", 1)[0]):
        return None  # the first folder's own directory of that name, which the child's copy held
    return (
        f"names the workspace folder \u201c{routed.folder.name}\u201d, which a subagent cannot "
        f"reach (it works in a copy of \u201c{first.name}\u201d only); not applied: make this "
        "change in the parent conversation"
    )


def merge_into(ctx: ToolContext, change: NetChange) -> MergeOutcome:
    """Merge ``change`` into the workspace ``ctx.workspace`` (runs on the parent engine's thread,
    so no capture or restore interleaves with the writes). Each path is decided by the pure
    rules (:func:`decide`) and written by the one workspace writer
    (:func:`~retrace.engine.restore.disk.apply_disk`): no write or delete through a link, never
    into ``.git``, nothing outside the workspace, checked against what was read. Deletes run
    first (a link the child replaced with a directory is gone before the directory is made)."""
    out = MergeOutcome()
    for rel in change.unstored:
        out.conflicts.append(MergeStep(rel, "conflict", reason="the subagent's version was too big to store"))
    planned: list[tuple[MergeStep, DiskOp]] = []
    with DirTree(ctx.workspace) as tree:
        for rel, (base, theirs) in change.changes.items():
            why = _plain(rel) or _other_folder(ctx, rel)
            if why is not None:
                out.conflicts.append(MergeStep(rel, "conflict", reason=why))
                continue
            try:
                ours, seen = _ours(tree, rel)
            except (LookupError, OSError, EscapeError) as e:
                out.conflicts.append(MergeStep(rel, "conflict", reason=str(e)))
                continue
            step = decide(rel, base, ours, theirs, unsaved=rel in ctx.dirty_paths)
            if step.kind in ("write", "delete"):
                planned.append((step, _op(rel, step, seen)))
            elif step.kind == "conflict":
                out.conflicts.append(step)
    planned.sort(key=lambda item: (item[1].kind != "delete", item[1].path))
    for step, op in planned:
        result = apply_disk(ctx.workspace, None, [op])
        if not result.ok:
            why = result.conflicts.get(op.path) or result.error or "the write failed"
            out.conflicts.append(MergeStep(op.path, "conflict", reason=f"could not be written here: {why}"))
            continue
        out.written.append(op.path)
        if step.reason == "merged":
            out.merged.append(op.path)
    return out
