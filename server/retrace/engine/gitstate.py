"""The workspace repository's git state, read cheaply for every checkpoint (no git process).

:func:`read_git_state` finds the repository holding the workspace (its ``.git`` directory, or a
``.git`` file ``gitdir: …`` of a linked worktree or submodule, in the workspace or a parent) and
reads only small files: ``HEAD``, the branch's loose ref or ``packed-refs`` (in the common
directory a linked worktree's ``commondir`` names), and the index file's stat. It never runs git,
so it runs no git hook and takes no git lock; it never writes.

The answer (:class:`GitState`, stored on the checkpoint as ``meta["git"]``):

* ``head`` — the commit ``HEAD`` resolves to (``None``: an unborn branch, or a ref store this
  reader does not know, e.g. reftable);
* ``branch`` — the branch name when ``HEAD`` is a branch, else ``None`` (``detached``);
* ``indexDirty`` — a hint, not ``git status``: the index file was written after ``HEAD`` last
  moved (a ``git add``, a ``git rm --cached``; also a ``git status`` that refreshed stat data).

No repository, or anything unreadable or malformed: ``None`` (nothing is recorded). Every read
is bounded in size; ``packed-refs`` is parsed once per (size, mtime) and cached.
"""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrace.oscompat import O_BINARY, O_CLOEXEC, O_NONBLOCK

MAX_SMALL = 4096
"""Largest ``HEAD`` / ref / ``.git`` file read (real ones are ~50 bytes)."""
MAX_PACKED = 32 * 1024 * 1024
MAX_PARENTS = 64
LOOK_AGAIN_S = 10.0
"""No repository found: look again after this long (a ``git init`` after the store opened)."""
MAX_SYMREF_DEPTH = 5
_OID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_REF = re.compile(r"^refs/[A-Za-z0-9._/+@-]{1,400}$")


@dataclass(frozen=True)
class GitState:
    head: str | None
    branch: str | None
    detached: bool
    index_dirty: bool

    def to_meta(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "branch": self.branch,
            "detached": self.detached,
            "indexDirty": self.index_dirty,
        }

    @staticmethod
    def from_meta(value: object) -> GitState | None:
        """A state stored by :meth:`to_meta` (``None`` for anything else: no repository then,
        or a damaged value)."""
        if not isinstance(value, dict):
            return None
        head, branch = value.get("head"), value.get("branch")
        if head is not None and not (isinstance(head, str) and _OID.match(head)):
            return None
        if branch is not None and not isinstance(branch, str):
            return None
        return GitState(head, branch, bool(value.get("detached")), bool(value.get("indexDirty")))


def _read_small(path: Path) -> str | None:
    """A small regular file's text (never blocks on a FIFO or device put in its place)."""
    data = _read_bounded(path, MAX_SMALL)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes, ``None`` when longer than ``limit`` or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_BINARY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if size > limit else b"".join(chunks)


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@dataclass(frozen=True)
class GitDirs:
    git_dir: Path
    """Per-worktree: ``HEAD``, ``index``, ``logs/HEAD``."""
    common_dir: Path
    """Shared: ``refs/``, ``packed-refs``."""


def _dir_from_file(dotgit: Path) -> Path | None:
    text = _read_small(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    if not str(target):
        return None
    return target if target.is_absolute() else dotgit.parent / target


def find_git_dirs(workspace: Path) -> GitDirs | None:
    """The repository holding ``workspace`` (``None``: none)."""
    here = workspace
    for _ in range(MAX_PARENTS):
        dotgit = here / ".git"
        git_dir: Path | None = None
        if dotgit.is_dir():
            git_dir = dotgit
        elif dotgit.is_file():
            git_dir = _dir_from_file(dotgit)
        if git_dir is not None:
            if not (git_dir / "HEAD").is_file():
                return None
            common = _read_small(git_dir / "commondir")
            common_dir = git_dir
            if common is not None and common.strip():
                c = Path(common.strip())
                common_dir = c if c.is_absolute() else git_dir / c
            return GitDirs(git_dir, common_dir)
        if here.parent == here:
            return None
        here = here.parent
    return None


def parse_packed_refs(text: str) -> dict[str, str]:
    """``packed-refs`` → ref name → object id (peeled ``^`` lines and comments skipped)."""
    refs: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line[0] in "#^":
            continue
        oid, _, name = line.partition(" ")
        if _OID.match(oid) and _REF.match(name):
            refs[name] = oid
    return refs


class GitStateReader:
    """:func:`read_git_state` with the repository location and ``packed-refs`` cached."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._dirs: GitDirs | None = None
        self._looked = False
        self._looked_at = 0.0
        self._packed_key: tuple[int, int] | None = None
        self._packed: dict[str, str] = {}

    def _packed_refs(self, common: Path) -> dict[str, str]:
        path = common / "packed-refs"
        try:
            st = path.stat()
        except OSError:
            return {}
        key = (st.st_size, st.st_mtime_ns)
        if key != self._packed_key:
            data = _read_bounded(path, MAX_PACKED)
            if data is None:
                return {}
            self._packed, self._packed_key = parse_packed_refs(data.decode("utf-8", "replace")), key
        return self._packed

    def _resolve(self, dirs: GitDirs, ref: str) -> tuple[str | None, int]:
        """(object id, the loose ref file's mtime) of ``ref``, following symbolic refs."""
        for _ in range(MAX_SYMREF_DEPTH):
            if not _REF.match(ref) or ".." in ref:
                return None, 0
            loose = dirs.common_dir / ref
            text = _read_small(loose)
            if text is None:
                return self._packed_refs(dirs.common_dir).get(ref), 0
            text = text.strip()
            if text.startswith("ref:"):
                ref = text[4:].strip()
                continue
            return (text if _OID.match(text) else None), _mtime(loose)
        return None, 0

    def read(self) -> GitState | None:
        now = time.monotonic()
        if not self._looked or (self._dirs is None and now - self._looked_at > LOOK_AGAIN_S):
            self._dirs, self._looked, self._looked_at = find_git_dirs(self._workspace), True, now
        dirs = self._dirs
        if dirs is None:
            return None
        head_text = _read_small(dirs.git_dir / "HEAD")
        if head_text is None:
            self._looked = False  # the repository may have gone: look again next time
            return None
        head_text = head_text.strip()
        moved = max(_mtime(dirs.git_dir / "HEAD"), _mtime(dirs.git_dir / "logs" / "HEAD"))
        if head_text.startswith("ref:"):
            ref = head_text[4:].strip()
            oid, ref_mtime = self._resolve(dirs, ref)
            branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
            if branch == ".invalid":  # reftable: refs this reader cannot read
                return None
            state = GitState(oid, branch, False, False)
            moved = max(moved, ref_mtime)
        elif _OID.match(head_text):
            state = GitState(head_text, None, True, False)
        else:
            return None
        index = _mtime(dirs.git_dir / "index")
        return GitState(state.head, state.branch, state.detached, index > moved > 0)


def read_git_state(workspace: Path) -> GitState | None:
    """The git state of the repository holding ``workspace`` now (``None``: no repository)."""
    return GitStateReader(workspace).read()
