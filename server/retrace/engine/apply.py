"""Transactional disk apply of a restore: atomic per-file writes, verify, roll back on failure.

Every write goes to a temporary file in the destination directory and is published with
``os.replace`` (a reader never sees half a file). Deletes run first and prune directories that
became empty because of them (never one that was empty before), so a file can take the place
of a removed directory. Every touched path is then re-read and compared with what was intended;
on any error or mismatch the already-applied paths are put back from their pre-images.
Never writes through a symlinked directory, never outside the workspace.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH101, PTH102, PTH103, PTH105, PTH106, PTH108, PTH112, PTH114, PTH115, PTH117, PTH118, PTH119, PTH120, PTH123, PTH211

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from retrace.engine.capture.scan import read_entry
from retrace.engine.manifest import same
from retrace.engine.models import FileEntry
from retrace.engine.store.blobs import write_all

OpKind = Literal["write", "delete", "chmod"]
PARALLEL_WRITES_FROM = 16


@dataclass
class Op:
    path: str
    kind: OpKind
    entry: FileEntry | None
    """The intended result (``None`` for a delete)."""
    data: bytes | None = None
    """For ``write``: the file bytes (files) — symlinks use ``entry.target``."""


@dataclass
class _Pre:
    kind: Literal["absent", "file", "symlink"]
    data: bytes = b""
    mode: int = 0o644
    target: str = ""


@dataclass
class ApplyResult:
    ok: bool
    error: str | None = None
    failed_path: str | None = None
    rolled_back: bool = True
    mismatches: dict[str, str] = field(default_factory=dict)


class ApplyError(Exception):
    def __init__(self, path: str, msg: str) -> None:
        super().__init__(msg)
        self.path = path


def exec_mode(mode: int, executable: bool) -> int:
    perms = stat.S_IMODE(mode)
    if executable:
        return perms | ((perms & 0o444) >> 2) | stat.S_IXUSR
    return perms & ~0o111


class _Applier:
    def __init__(self, workspace: Path, max_bytes: int) -> None:
        self.ws = os.path.realpath(workspace)
        self.max_bytes = max_bytes
        self.pre: dict[str, _Pre] = {}
        self.done: list[str] = []
        self.created_dirs: list[str] = []
        self.removed_dirs: list[str] = []
        self.ok_dirs: set[str] = set()
        self._tmp_tag = f"{os.getpid()}-{secrets.token_hex(4)}"

    def abs(self, rel: str) -> str:
        return os.path.join(self.ws, rel)

    def check_parent(self, rel: str) -> None:
        """The existing part of ``rel``'s parent chain must be real directories inside the workspace."""
        parent = os.path.dirname(self.abs(rel))
        if parent in self.ok_dirs:
            return
        probe = parent
        while not os.path.lexists(probe):
            probe = os.path.dirname(probe)
        if probe in self.ok_dirs:
            return
        if os.path.realpath(probe) != probe or not (probe == self.ws or probe.startswith(self.ws + os.sep)):
            raise ApplyError(
                rel, f"refusing to write {rel}: a parent directory is a symlink or outside the workspace"
            )
        if not os.path.isdir(probe):
            raise ApplyError(rel, f"cannot write {rel}: {os.path.relpath(probe, self.ws)} is not a directory")
        # Checked once per apply: only this apply creates or removes directories meanwhile.
        self.ok_dirs.add(probe)

    def capture_pre(self, rel: str) -> None:
        if rel in self.pre:
            return
        p = self.abs(rel)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            self.pre[rel] = _Pre("absent")
            return
        if stat.S_ISLNK(st.st_mode):
            self.pre[rel] = _Pre("symlink", target=os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                self.pre[rel] = _Pre("file", data=f.read(), mode=stat.S_IMODE(st.st_mode))
        elif stat.S_ISDIR(st.st_mode):
            raise ApplyError(rel, f"cannot restore {rel}: a directory is in the way")
        else:
            raise ApplyError(rel, f"cannot restore {rel}: an unsupported file type is in the way")

    def makedirs(self, rel: str) -> None:
        parent = os.path.dirname(self.abs(rel))
        missing: list[str] = []
        probe = parent
        while not os.path.lexists(probe):
            missing.append(probe)
            probe = os.path.dirname(probe)
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                if not os.path.isdir(d) or os.path.islink(d):
                    raise
                continue  # another writer thread of this apply made it
            self.created_dirs.append(d)

    def write(self, rel: str, entry: FileEntry, data: bytes | None, mode: int | None) -> None:
        self.check_parent(rel)
        self.makedirs(rel)
        p = self.abs(rel)
        tmp = os.path.join(os.path.dirname(p), f".retrace-{self._tmp_tag}-{os.path.basename(p)}.tmp")
        try:
            if entry.kind == "symlink":
                assert entry.target is not None
                os.symlink(entry.target, tmp)
            else:
                perms = exec_mode(mode if mode is not None else 0o644, entry.executable)
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    write_all(fd, data or b"")
                    os.fchmod(fd, perms)
                finally:
                    os.close(fd)
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def delete(self, rel: str) -> None:
        self.check_parent(rel)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.abs(rel))

    def prune(self, rel: str) -> None:
        self.removed_dirs += prune_empty_parents(self.ws, self.abs(rel))

    def run(self, ops: list[Op]) -> None:
        for op in ops:
            self.capture_pre(op.path)
        for op in ops:
            if op.kind == "delete":
                self.done.append(op.path)
                self.delete(op.path)
        for op in ops:
            if op.kind == "delete":
                self.prune(op.path)
        writes = [op for op in ops if op.kind != "delete"]
        if len(writes) > PARALLEL_WRITES_FROM:
            # Each write is an independent create + rename; the syscalls release the GIL, so a
            # few threads overlap them. The first error is re-raised after all have finished,
            # and the rollback then covers everything any thread did.
            with ThreadPoolExecutor(max_workers=4) as pool:
                futures = [pool.submit(self.put, op) for op in writes]
            for fut in futures:
                fut.result()
        else:
            for op in writes:
                self.put(op)

    def put(self, op: Op) -> None:
        assert op.entry is not None
        pre = self.pre[op.path]
        self.done.append(op.path)
        if op.kind == "chmod" and pre.kind == "file":
            self.check_parent(op.path)
            os.chmod(self.abs(op.path), exec_mode(pre.mode, op.entry.executable))
        elif op.kind == "chmod" and pre.kind == "symlink":
            return  # symlinks have no mode of their own
        else:
            data = op.data if op.kind == "write" else pre.data
            self.write(op.path, op.entry, data, pre.mode if pre.kind == "file" else None)

    def verify(self, ops: list[Op]) -> dict[str, str]:
        bad: dict[str, str] = {}
        for op in ops:
            p = self.abs(op.path)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                if op.entry is not None:
                    bad[op.path] = "missing after restore"
                continue
            if op.entry is None:
                bad[op.path] = "still exists after delete"
                continue
            got = read_entry(p, st, self.max_bytes)
            if got is None or not same(got.entry, op.entry):
                bad[op.path] = "content differs from the checkpoint after writing"
        return bad

    def rollback(self) -> None:
        for rel in reversed(self.done):
            pre = self.pre.get(rel)
            if pre is None:
                continue
            p = self.abs(rel)
            with contextlib.suppress(OSError):
                if pre.kind == "absent":
                    if (os.path.lexists(p) and not os.path.isdir(p)) or os.path.islink(p):
                        os.unlink(p)
                    continue
                os.makedirs(os.path.dirname(p), exist_ok=True)
                if os.path.lexists(p) and not os.path.isdir(p):
                    os.unlink(p)
                if pre.kind == "symlink":
                    os.symlink(pre.target, p)
                else:
                    with open(p, "wb") as f:
                        f.write(pre.data)
                    os.chmod(p, pre.mode)
        for d in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        for d in reversed(self.removed_dirs):
            with contextlib.suppress(OSError):
                os.makedirs(d, exist_ok=True)


def prune_empty_parents(root: str, path: str) -> list[str]:
    """Remove the directories a delete of ``path`` left empty: its parent, then upwards, stopping
    at the first directory that still holds anything and never removing ``root`` itself (or
    anything outside it). Returns the removed directories, innermost first. The one pruning rule
    of every restore, on disk and through the editor."""
    removed: list[str] = []
    d = os.path.dirname(path)
    while d != root and d.startswith(root + os.sep):
        try:
            os.rmdir(d)
        except OSError:
            break
        removed.append(d)
        d = os.path.dirname(d)
    return removed


def apply_ops(workspace: Path, ops: list[Op], max_bytes: int) -> ApplyResult:
    """Apply ``ops`` (each path at most once), verify, roll back everything on failure."""
    a = _Applier(workspace, max_bytes)
    try:
        a.run(ops)
    except (OSError, ApplyError) as exc:
        path = exc.path if isinstance(exc, ApplyError) else getattr(exc, "filename", None)
        a.rollback()
        rel = os.path.relpath(path, a.ws) if isinstance(path, str) and os.path.isabs(path) else path
        return ApplyResult(ok=False, error=str(exc), failed_path=rel, rolled_back=True)
    bad = a.verify(ops)
    if bad:
        a.rollback()
        first = next(iter(bad))
        return ApplyResult(
            ok=False,
            error="; ".join(f"{p}: {why}" for p, why in bad.items()),
            failed_path=first,
            rolled_back=True,
            mismatches=bad,
        )
    return ApplyResult(ok=True)
