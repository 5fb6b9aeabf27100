"""Every path a tool touches is resolved inside the workspace, or refused with one clear line.

Refused: absolute paths outside the workspace, ``..`` escapes, symlinks whose target leaves the
workspace, symlink loops, names that are not valid UTF-8 (lone surrogates would become raw bytes on
disk that no editor, journal or model can name), names too long for the file system, and (for
writes) anything inside a ``.git`` directory or an existing device, FIFO or socket. Reads go through
:func:`read_regular`, which refuses anything but a regular file (a FIFO would block forever,
``/dev/zero`` would never end). Returned relative paths are POSIX-style, as the engine and the
editor name them.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from retrace import oscompat
from retrace.agent.folders import route
from retrace.agent.tools.base import ToolContext, ToolError
from retrace.engine.folders import Folder
from retrace.engine.workspace import EscapeError, disk_case, is_git_name, windows_name_problem
from retrace.oscompat import O_NONBLOCK

NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096


def workspace_root(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.workspace))


def _refuse_unportable_names(raw: str, rel: str) -> None:
    """On Windows, a component Windows cannot store as itself (``nul.txt`` opens the NUL device,
    ``a.txt:x`` a hidden stream of ``a.txt``, ``x.`` becomes ``x``) is refused."""
    if not oscompat.is_windows() or rel == ".":
        return
    for part in rel.split("/"):
        if (problem := windows_name_problem(part)) is not None:
            raise ToolError(f"{raw}: {part!r} is {problem}; refused")


@dataclass(frozen=True)
class Target:
    """A path a file tool works on: where it is, relative to its folder, and which folder."""

    real: Path
    rel: str
    folder: Folder | None = None
    """Another folder of a multi-root workspace (``None``: the workspace, the first folder)."""

    @property
    def shown(self) -> str:
        """How the model and the user see it: ``<folder>/<rel>`` in another folder."""
        return f"{self.folder.name}/{self.rel}" if self.folder is not None else self.rel

    def result_paths(self) -> dict[str, list[str]] | None:
        """``ToolResult.folder_paths`` for a write of this target."""
        return {self.folder.root: [self.rel]} if self.folder is not None else None

    def changed(self) -> list[str]:
        """``ToolResult.changed_paths`` for a write of this target (the first folder's)."""
        return [] if self.folder is not None else [self.rel]


def _place(ctx: ToolContext, raw: str) -> tuple[ToolContext, str, Folder | None]:
    """Where ``raw`` is in a multi-root workspace: the context to resolve it in (rooted in its
    folder), the path there, and the folder when it is not the first (``ctx``'s own)."""
    try:
        routed = route(ctx.folders, raw)
    except EscapeError as exc:
        raise ToolError(f"{exc}; refused") from None
    if routed is None:
        return dataclasses.replace(ctx, folders=()), raw, None
    if routed.folder == ctx.folders[0]:
        return dataclasses.replace(ctx, folders=()), routed.rel, None
    root = routed.folder.root
    there = dataclasses.replace(
        ctx, workspace=Path(root), folders=(), dirty_paths=ctx.folder_dirty.get(root, frozenset())
    )
    return there, routed.rel, routed.folder


def resolve_target(ctx: ToolContext, raw: str, *, allow_root: bool = False, write: bool = False) -> Target:
    """:func:`resolve` (``write``: :func:`resolve_for_write`) in whichever folder ``raw`` names."""
    there, path, folder = _place(ctx, raw) if ctx.folders else (ctx, raw, None)
    real, rel = resolve_for_write(there, path) if write else resolve(there, path, allow_root=allow_root)
    return Target(real, rel, folder)


@dataclass(frozen=True)
class Place:
    """Where a directory or file named for a search or a command is: the context rooted in its
    folder (``ctx`` for the first folder), the real path, the path in the folder, and the folder
    when it is not the first."""

    ctx: ToolContext
    real: Path
    rel: str
    folder: Folder | None = None

    def shown(self, path: str) -> str:
        """A folder-relative path as the model names it (``<folder>/path`` in another folder)."""
        return f"{self.folder.name}/{path}" if self.folder is not None else path


def locate(ctx: ToolContext, raw: str) -> Place:
    """:func:`resolve` (the root allowed) in whichever folder ``raw`` names (searches, a
    command's ``cwd``)."""
    there, path, folder = _place(ctx, raw) if ctx.folders else (ctx, raw, None)
    real, rel = _resolve_here(there, path, allow_root=True)
    return Place(there, real, rel, folder)


def resolve(ctx: ToolContext, raw: str, *, allow_root: bool = False) -> tuple[Path, str]:
    """(absolute real path, workspace-relative POSIX path) of ``raw``, or :class:`ToolError`.
    In a multi-root workspace a path naming another folder is refused here (the file tools use
    :func:`resolve_target`, searches and a command's ``cwd`` :func:`locate`)."""
    if ctx.folders:
        there, path, folder = _place(ctx, raw)
        if folder is not None:
            raise ToolError(f"{raw} is in another workspace folder; refused here")
        return _resolve_here(there, path, allow_root=allow_root)
    return _resolve_here(ctx, raw, allow_root=allow_root)


def _resolve_here(ctx: ToolContext, raw: str, *, allow_root: bool) -> tuple[Path, str]:
    """:func:`resolve` in ``ctx.workspace`` alone."""
    if not raw or not raw.strip():
        raise ToolError("path is empty")
    if "\x00" in raw:
        raise ToolError("path contains a NUL byte")
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("path is not valid UTF-8 (it contains a lone surrogate); refused") from None
    if len(encoded) > PATH_MAX_BYTES or any(len(part) > NAME_MAX_BYTES for part in encoded.split(b"/")):
        raise ToolError(
            f"path is too long (at most {NAME_MAX_BYTES} bytes a name, {PATH_MAX_BYTES} in all); refused"
        )
    root = workspace_root(ctx)
    joined = Path(raw) if Path(raw).is_absolute() else root / raw
    real = Path(os.path.realpath(joined))
    try:
        joined.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ToolError(f"{raw} is a symlink loop; refused") from None
    if not real.is_relative_to(root):
        if Path(os.path.normpath(joined)).is_relative_to(root):
            raise ToolError(f"{raw} resolves through a symlink to a place outside the workspace; refused")
        raise ToolError(f"{raw} is outside the workspace; only paths inside {root} are allowed")
    rel = real.relative_to(root).as_posix()
    if oscompat.ignores_case() and rel != ".":
        rel = disk_case(root, rel)  # one name per file where case does not tell files apart
        real = root / rel
    _refuse_unportable_names(raw, rel)
    if rel == "." and not allow_root:
        raise ToolError(f"{raw} is the workspace folder itself, not a file")
    return real, "" if rel == "." else rel


def resolve_for_write(ctx: ToolContext, raw: str) -> tuple[Path, str]:
    """Like :func:`resolve`, also refusing ``.git`` internals and files unsaved in the editor."""
    real, rel = resolve(ctx, raw)
    if any(is_git_name(part) for part in rel.split("/")):
        raise ToolError(f"{rel} is inside a .git directory; Retrace never writes there")
    if rel in ctx.dirty_paths:
        raise ToolError(f"{rel} has unsaved changes in the editor; not overwriting")
    if real.is_dir():
        raise ToolError(f"{rel} is a directory")
    if real.exists() and not real.is_file():
        raise ToolError(f"{rel} is not a regular file (a device, FIFO or socket); refused")
    return real, rel


def read_regular(real: Path, rel: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit``), or :class:`ToolError` with one clear line."""
    try:
        with open(real, "rb", opener=_open_nonblocking) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ToolError(f"{rel} is not a regular file (a device, FIFO or socket); refused")
            return f.read() if limit is None else f.read(limit)
    except FileNotFoundError:
        raise ToolError(f"{rel} does not exist") from None
    except IsADirectoryError:
        raise ToolError(f"{rel} is a directory") from None
    except OSError as e:
        raise ToolError(f"cannot read {rel}: {e.strerror}") from None


def _open_nonblocking(path: str, flags: int) -> int:
    # O_NONBLOCK: opening a FIFO with no writer must not hang before fstat can refuse it.
    # (Windows has neither FIFOs nor the flag: 0 there.)
    return os.open(path, flags | O_NONBLOCK)


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, keeping the old file's permission bits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    # A short name of its own: a temporary named after a 255-byte file name would be too long.
    tmp = path.with_name(f".retrace-tmp-{os.getpid()}-{secrets.token_hex(6)}")
    try:
        with tmp.open("wb") as f:
            f.write(data)
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
