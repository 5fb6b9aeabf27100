"""Every path a tool touches is resolved inside the workspace, or refused with one clear line.

Refused: absolute paths outside the workspace, ``..`` escapes, symlinks whose target leaves the
workspace, and (for writes) anything inside a ``.git`` directory. Returned relative paths are
POSIX-style, as the engine and the editor name them.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrace.agent.tools.base import ToolContext, ToolError


def workspace_root(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.workspace))


def resolve(ctx: ToolContext, raw: str, *, allow_root: bool = False) -> tuple[Path, str]:
    """(absolute real path, workspace-relative POSIX path) of ``raw``, or :class:`ToolError`."""
    if not raw or not raw.strip():
        raise ToolError("path is empty")
    if "\x00" in raw:
        raise ToolError("path contains a NUL byte")
    root = workspace_root(ctx)
    joined = Path(raw) if Path(raw).is_absolute() else root / raw
    real = Path(os.path.realpath(joined))
    if not real.is_relative_to(root):
        if Path(os.path.normpath(joined)).is_relative_to(root):
            raise ToolError(f"{raw} resolves through a symlink to a place outside the workspace; refused")
        raise ToolError(f"{raw} is outside the workspace; only paths inside {root} are allowed")
    rel = real.relative_to(root).as_posix()
    if rel == "." and not allow_root:
        raise ToolError(f"{raw} is the workspace folder itself, not a file")
    return real, "" if rel == "." else rel


def resolve_for_write(ctx: ToolContext, raw: str) -> tuple[Path, str]:
    """Like :func:`resolve`, also refusing ``.git`` internals and files unsaved in the editor."""
    real, rel = resolve(ctx, raw)
    if ".git" in rel.split("/"):
        raise ToolError(f"{rel} is inside a .git directory; Retrace never writes there")
    if rel in ctx.dirty_paths:
        raise ToolError(f"{rel} has unsaved changes in the editor; not overwriting")
    if real.is_dir():
        raise ToolError(f"{rel} is a directory")
    return real, rel


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, keeping the old file's permission bits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    tmp = path.with_name(f".{path.name}.retrace-tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            f.write(data)
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
