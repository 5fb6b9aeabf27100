"""A child's net change merged into the parent's workspace (the I/O around :mod:`.merge`).

:func:`net_change` reads, from the child's own store, every path that differs between the
child's first checkpoint (the copy of the parent state it started from) and its last one.
:func:`merge_into` then decides each path against the parent's file on disk now and writes what
the rules allow, through the same safe writes as the agent's file tools (no ``.git``, nothing
unsaved in the editor, no write through a directory or device). Conflicts are returned, never
resolved: the parent's file is left exactly as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from retrace.agent.subagents.merge import MergeStep, Version, decide
from retrace.agent.tools.base import ToolContext, ToolError
from retrace.agent.tools.paths import atomic_write, resolve, resolve_for_write
from retrace.engine.engine import Engine
from retrace.engine.models import FileEntry

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


def _ours(root: Path, rel: str) -> Version | None:
    """The parent's current version of ``rel``; ``LookupError`` when it is neither a file, a
    symbolic link nor absent (a directory, a device...)."""
    path = root / rel
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return Version(os.fsencode(path.readlink()), link=True)
    if not stat.S_ISREG(st.st_mode):
        raise LookupError("something that is not a file is in the way here")
    return Version(path.read_bytes(), bool(st.st_mode & 0o111))


def _write(ctx: ToolContext, rel: str, version: Version) -> None:
    if version.link:
        real, _ = resolve(ctx, rel)
        with contextlib.suppress(FileNotFoundError):
            if real.is_symlink() or real.is_file():
                real.unlink()
        real.parent.mkdir(parents=True, exist_ok=True)
        real.symlink_to(os.fsdecode(version.data))
        return
    real, _ = resolve_for_write(ctx, rel)
    atomic_write(real, version.data)
    mode = real.stat().st_mode
    want = (mode | 0o111) if version.executable else (mode & ~0o111)
    if want != mode:
        real.chmod(stat.S_IMODE(want))


def _delete(ctx: ToolContext, rel: str) -> None:
    real, _ = resolve(ctx, rel)
    with contextlib.suppress(FileNotFoundError):
        real.unlink()


def merge_into(ctx: ToolContext, change: NetChange) -> MergeOutcome:
    """Merge ``change`` into the workspace ``ctx.workspace`` (runs on the parent engine's thread,
    so no capture or restore interleaves with the writes)."""
    out = MergeOutcome()
    for rel in change.unstored:
        out.conflicts.append(MergeStep(rel, "conflict", reason="the subagent's version was too big to store"))
    for rel, (base, theirs) in change.changes.items():
        try:
            ours = _ours(ctx.workspace, rel)
        except (LookupError, OSError) as e:
            out.conflicts.append(MergeStep(rel, "conflict", reason=str(e)))
            continue
        step = decide(rel, base, ours, theirs, unsaved=rel in ctx.dirty_paths)
        try:
            if step.kind == "write" and step.version is not None:
                _write(ctx, rel, step.version)
            elif step.kind == "delete":
                _delete(ctx, rel)
            else:
                if step.kind == "conflict":
                    out.conflicts.append(step)
                continue
        except (ToolError, OSError) as e:
            out.conflicts.append(MergeStep(rel, "conflict", reason=f"could not be written here: {e}"))
            continue
        out.written.append(rel)
        if step.reason == "merged":
            out.merged.append(rel)
    return out
