"""Disk apply of a restore: compare-and-swap per path, nothing read that is only removed,
exact rollback.

Contract of :func:`apply_disk`:

* every replace/delete/chmod is a compare-and-swap against what the plan saw: the entry's full
  stat identity (dev, ino, size, mtime_ns, ctime_ns, mode) is checked immediately before the
  rename, and the entry that was actually moved away is checked again right after it (an atomic
  ``RENAME_EXCHANGE`` where the kernel has it). A mismatch is a *conflict*: the whole restore is
  rolled back and the concurrent content stays exactly as its writer left it;
* a replaced or deleted entry is MOVED into the transaction's trash (never read, never copied),
  so rollback puts back the very same inode (hard links, symlinks and directories included) and
  deleting a 2 GB file costs no memory;
* new content comes from a lazy source (which reads, decompresses and verifies it against its
  hash: one pass, no separate check before the apply), through a temporary sibling
  ``.rt-<8 random chars>.tmp`` (never derived from the target name) renamed into place; a large
  batch is fetched and written by a few threads (:mod:`.writers`), each holding one file's bytes
  at a time. A source that cannot deliver intact bytes (:class:`SourceMissingError`) fails the
  apply, which then rolls back everything: a restore never half-applies for a damaged blob;
* every operation goes through :class:`~retrace.engine.workspace.DirTree` and its file-system
  backend (:mod:`retrace.engine.fsops`), so no parent component is ever followed through a
  symlink, during the apply or the rollback (an existing entry is opened never blocking: a FIFO
  swapped in after the check opens at once, and its identity then fails the compare-and-swap);
* directories created by the apply are removed by the rollback, directories emptied by its
  deletes are recreated;
* an applied result names how many renames it made at each path (:attr:`ApplyResult.renames`),
  so the caller can tell them from anyone else's change in the watcher's ordered events; the
  ``progress`` callback runs on the applying thread now and then (the watcher drains its queue)
  when the apply is large enough (:data:`DRAIN_FROM`) to overflow the queue otherwise;
* what is written is verified as it is written: the sha256 of the bytes the kernel accepted
  must be the entry's hash, else the apply fails and rolls back (no re-read afterwards).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from retrace.engine.fsops import Dir
from retrace.engine.models import FileEntry
from retrace.engine.restore import faults
from retrace.engine.restore.entries import (
    blocking_ancestor,
    exec_mode,
    hash_fd,
    process_umask,
    write_hashed,
)
from retrace.engine.restore.ops import (
    ApplyError,
    ApplyResult,
    ConflictError,
    DiskOp,
    SourceMissingError,
)
from retrace.engine.restore.trash import discard_later
from retrace.engine.restore.writers import PARALLEL_WRITES_FROM, make_in_parallel
from retrace.engine.workspace import DirTree, EscapeError, Identity, check_rel, temp_name

CHUNK = 1 << 20
PROGRESS_EVERY = 256
"""Operations between two calls of the apply's ``progress`` callback (and at most
:data:`PROGRESS_S` seconds while the writer threads run)."""
PROGRESS_S = 0.05
DRAIN_FROM = 1024
"""Operations from which the apply calls ``progress`` at all. A renamed file costs the watcher
about eight queued events; below this many operations the kernel's queue (16,384 events by
default) cannot overflow, so the watcher is drained ONCE, when the restore settles its renames,
instead of while the apply runs."""
Progress = Callable[[], None]


@dataclass(frozen=True)
class Staged:
    op: DiskOp
    fd: Dir
    """The parent directory."""
    name: str
    mode: int
    """Mode the new file starts from (the current file's, else 0o644)."""


Slot = tuple[str | None, str]
"""Where a moved-away entry waits: (``None`` = the store's trash directory, else the
workspace-relative directory it was moved aside in when the trash is on another device; name)."""

# Undo records, newest last: (kind, path, trash slot or old mode, identity of what we put there).
_UndoKind = Literal["created", "replaced", "moved", "mkdir", "rmdir", "chmod"]
_Undo = tuple[_UndoKind, str, Slot | str, Identity | None]


class DiskTransaction:
    """One disk apply below ``workspace`` with its trash directory ``trash`` (on the store)."""

    def __init__(self, workspace: Path, trash: Path | None, progress: Progress | None = None) -> None:
        self.tree = DirTree(workspace)
        self.progress = progress
        """Called now and then from this thread (the watcher drains its queue meanwhile)."""
        self.trash_path = trash
        self.trash_fd: Dir | None = None
        self.store_trash = False
        if trash is not None:
            trash.mkdir(parents=True, exist_ok=True)
            self.trash_fd = self.tree.fs.open_root(os.path.realpath(trash))
            fs, root = self.tree.fs, self.tree.directory("")
            self.store_trash = fs.dir_stat(self.trash_fd).st_dev == fs.dir_stat(root).st_dev
        """Whether entries can be moved into the store's trash (same file system). When not, they
        go to :attr:`ws_trash`, a hidden directory at the workspace root made on first use."""
        self.ws_trash: str | None = None
        self.undo: list[_Undo] = []
        self.identity: dict[str, Identity | None] = {}
        self.prepared: dict[str, os.stat_result | None] = {}
        """What :meth:`prepare` found at each path (the compare-and-swap identity is taken from
        it; later steps reuse it instead of a stat of their own, then check it again)."""
        self._seq = 0
        self.stashed: list[Slot] = []
        self.swept: list[str] = []
        """Entries moved away that no op names: a blocking file/link, a directory in the way."""
        self.umask = process_umask()

    # ------------------------------------------------------------------ checks
    def _check_seen(self, op: DiskOp, st: os.stat_result | None) -> None:
        """The path still holds what the plan saw (before anything is written)."""
        seen = op.seen
        if seen.anything:
            self.identity[op.path] = Identity.of(st) if st is not None else None
            return
        if st is None:
            if seen.entry is not None:
                raise ConflictError(op.path, "was removed after the restore was planned")
            self.identity[op.path] = None
            return
        if stat.S_ISDIR(st.st_mode) and seen.entry is None and (seen.directory or seen.identity is None):
            self.identity[op.path] = Identity.of(st)
            return
        if seen.identity is not None:
            if Identity.of(st) != seen.identity:
                raise ConflictError(op.path, "changed on disk after the restore was planned")
            self.identity[op.path] = seen.identity
            return
        if seen.entry is None:
            raise ConflictError(op.path, "appeared on disk after the restore was planned")
        self.identity[op.path] = self._verify_content(op.path, seen.entry, st)

    def _verify_content(self, rel: str, entry: FileEntry, st: os.stat_result) -> Identity:
        fd, name = self.tree.parent(rel)
        if stat.S_ISLNK(st.st_mode):
            if entry.kind != "symlink" or self.tree.fs.readlink(fd, name) != entry.target:
                raise ConflictError(rel, "changed on disk after the restore was planned")
        elif not stat.S_ISREG(st.st_mode) or entry.kind != "file":
            raise ConflictError(rel, "changed type after the restore was planned")
        elif entry.hash is not None:
            ffd = self.tree.fs.open_file(fd, name)
            try:
                before = Identity.of(os.fstat(ffd))
                digest = hash_fd(ffd)
                if digest != entry.hash or Identity.of(os.fstat(ffd)) != before:
                    raise ConflictError(rel, "changed on disk after the restore was planned")
            finally:
                os.close(ffd)
        elif st.st_size != entry.size:
            raise ConflictError(rel, "changed on disk after the restore was planned")
        return Identity.of(st)

    def _expect_now(self, rel: str, fd: Dir, name: str) -> os.stat_result | None:
        """Compare-and-swap guard: the entry at ``rel`` is still the one checked before."""
        st = self.tree.lstat_at(fd, name)
        want = self.identity.get(rel)
        got = Identity.of(st) if st is not None else None
        if got != want:
            raise ConflictError(rel, "changed on disk while the restore was running")
        return st

    # ------------------------------------------------------------------ trash
    def _slot_fd(self, slot: Slot) -> Dir:
        if slot[0] is None:
            assert self.trash_fd is not None
            return self.trash_fd
        return self.tree.directory(slot[0])

    def _stash(self, rel: str, fd: Dir, name: str) -> Slot:
        """Move the entry ``name`` (in directory ``fd``, the parent of ``rel``) out of the way,
        always within the workspace's own file system (a rename, never a copy): into the store's
        trash when the store shares it, else into the workspace trash (:meth:`_workspace_trash`),
        else (a mount point inside the workspace) beside itself under a temporary name."""
        self._seq += 1
        label = f"{self._seq:06d}"
        if self.store_trash and self.trash_fd is not None:
            try:
                self.tree.move(fd, name, self.trash_fd, label)
                return self._stashed((None, label))
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                self.store_trash = False  # a bind mount: same device, still another mount
        try:
            slot: Slot = (self._workspace_trash(), label)
            self.tree.move(fd, name, self.tree.directory(slot[0] or ""), label)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            slot = (rel.rpartition("/")[0], temp_name(".old"))
            self.tree.move(fd, name, fd, slot[1])
        return self._stashed(slot)

    def _stashed(self, slot: Slot) -> Slot:
        self.stashed.append(slot)
        return slot

    def _workspace_trash(self) -> str:
        """The hidden trash directory at the workspace root (``.rt-<8 hex>.trash``, mode 0700),
        made on first use: what a restore moves away stays on the workspace's file system, so
        moving it back is a rename and the directories it leaves empty can be pruned. Removed
        when the apply ends (kept only when a rollback could not put everything back)."""
        if self.ws_trash is None:
            name = temp_name(".trash")
            self.tree.fs.mkdir(self.tree.directory(""), name, 0o700)
            self.ws_trash = name
        return self.ws_trash

    def _to_trash(self, rel: str, fd: Dir, name: str) -> Slot:
        """Move the entry at ``rel`` into the trash, then prove it was the expected one."""
        slot = self._stash(rel, fd, name)
        sfd = self._slot_fd(slot)
        moved = Identity.of(self.tree.fs.lstat(sfd, slot[1]))
        if not moved.moved(self.identity.get(rel)):
            self.tree.move(sfd, slot[1], fd, name)
            self.stashed.remove(slot)
            raise ConflictError(rel, "changed on disk while the restore was running")
        return slot

    # ------------------------------------------------------------------ operations
    def prepare(self, ops: list[DiskOp]) -> None:
        for op in ops:
            try:
                st = self.tree.lstat(op.path)
            except (EscapeError, NotADirectoryError):
                # A parent is a file or a symlink now: nothing of the workspace is at this path.
                # If the plan replaces that parent, the write resolves through the new real
                # directory; if not, resolving it again fails and the restore rolls back.
                st = None
            self._check_seen(op, st)
            self.prepared[op.path] = st

    def delete(self, op: DiskOp) -> None:
        faults.fire("delete", op.path)
        if self.identity.get(op.path) is None:
            return  # nothing of the workspace is there (plan saw it through a replaced parent)
        fd, name = self.tree.parent(op.path)
        st = self._expect_now(op.path, fd, name)
        if st is None or stat.S_ISDIR(st.st_mode):
            return  # a directory is not the entry to delete: its files have ops of their own
        self.undo.append(("moved", op.path, self._to_trash(op.path, fd, name), None))

    def prune(self, rel: str) -> None:
        """Remove directories that became empty because of this apply's deletes."""
        head = rel.rpartition("/")[0]
        while head:
            parent, _, name = head.rpartition("/")
            try:
                pfd = self.tree.directory(parent)
                faults.fire("prune", head)
                self.tree.forget(head)
                self.tree.fs.rmdir(pfd, name)
            except OSError:
                return
            self.undo.append(("rmdir", head, "", None))
            if head in self.identity:
                self.identity[head] = None  # a directory in the way, gone with its last file
            head = parent

    def chmod(self, op: DiskOp) -> None:
        assert op.entry is not None
        faults.fire("chmod", op.path)
        fd, name = self.tree.parent(op.path)
        st = self._expect_now(op.path, fd, name)
        if st is None or not stat.S_ISREG(st.st_mode):
            return  # symlinks have no mode of their own
        ffd = self.tree.fs.open_file(fd, name)
        try:
            if Identity.of(os.fstat(ffd)) != self.identity.get(op.path):
                raise ConflictError(op.path, "changed on disk while the restore was running")
            self.tree.fs.fchmod(ffd, fd, name, exec_mode(st.st_mode, op.entry.executable))
            self.undo.append(("chmod", op.path, oct(stat.S_IMODE(st.st_mode)), None))
        finally:
            os.close(ffd)

    def _make_temp(self, fd: Dir, op: DiskOp, mode: int, data: bytes | None) -> str:
        entry = op.entry
        assert entry is not None
        tmp = temp_name()
        if entry.kind == "symlink":
            assert entry.target is not None
            self.tree.fs.symlink(entry.target, fd, tmp)
            return tmp
        faults.fire("write", op.path)
        if data is None:
            raise SourceMissingError(op.path, f"content of {op.path} is missing from the store or damaged")
        want = exec_mode(mode, entry.executable)
        # Created with its final mode when the umask cannot strip any of it (one chmod less).
        direct = self.umask is not None and not want & self.umask
        ffd = self.tree.fs.create_file(fd, tmp, want if direct else 0o600)
        try:
            written = write_hashed(ffd, data)
            if entry.hash is not None and written != entry.hash:
                # Verified by what was written: bytes that are not the recorded content (a
                # flipped bit in memory after the store verified them) never reach the path.
                why = f"the bytes written for {op.path} are not its recorded content"
                raise SourceMissingError(op.path, why)
            if not direct:
                self.tree.fs.fchmod(ffd, fd, tmp, want)
        except BaseException:
            os.close(ffd)
            self.tree.fs.unlink(fd, tmp)
            raise
        os.close(ffd)
        return tmp

    @staticmethod
    def _data(op: DiskOp) -> bytes | None:
        if op.entry is None or op.entry.kind != "file":
            return None
        return op.source() if op.source is not None else b""

    def _parent_for_write(self, op: DiskOp) -> tuple[Dir, str]:
        created: list[str] = []
        try:
            return self.tree.parent(op.path, create=created)
        except (NotADirectoryError, EscapeError):
            if not op.replace_directory:
                raise
        finally:
            self.undo.extend(("mkdir", d, "", None) for d in created)
        # Forced: a file or link stands where a parent directory must be. Move it (never
        # follow it) to the trash and make the directory.
        blocker = blocking_ancestor(self.tree, op.path)
        fd, name = self.tree.parent(blocker)
        st = self.tree.fs.lstat(fd, name)
        self.identity[blocker] = Identity.of(st)
        self.undo.append(("moved", blocker, self._to_trash(blocker, fd, name), None))
        self.swept.append(blocker)
        created = []
        try:
            return self.tree.parent(op.path, create=created)
        finally:
            self.undo.extend(("mkdir", d, "", None) for d in created)

    def _stage(self, op: DiskOp) -> Staged:
        """Sequential part of a write: the parent directory (made if missing) and its checks."""
        fd, name = self._parent_for_write(op)
        # The entry prepare() checked (one stat less per file), unless a directory (this apply may
        # have pruned it). Any change since fails the compare-and-swap just before the rename.
        cur = self.prepared.get(op.path)
        if op.path not in self.prepared or (cur is not None and stat.S_ISDIR(cur.st_mode)):
            cur = self.tree.lstat_at(fd, name)
        if cur is not None and stat.S_ISDIR(cur.st_mode) and not op.replace_directory:
            raise ConflictError(op.path, "a directory with files that are not tracked is in the way")
        mode = cur.st_mode if cur is not None and stat.S_ISREG(cur.st_mode) else 0o644
        return Staged(op, fd, name, mode)

    def _temps_in_parallel(self, staged: list[Staged]) -> dict[int, str]:
        """Temporary files of many writes at once (:func:`make_in_parallel`)."""
        temps, error = make_in_parallel(
            staged,
            lambda item: self._make_temp(item.fd, item.op, item.mode, self._data(item.op)),
            self.progress and self._tick,
            PROGRESS_S,
        )
        if error is not None:
            self._drop_temps(staged, temps)
            raise error
        return temps

    def _drop_temps(self, staged: list[Staged], temps: dict[int, str]) -> None:
        for index, tmp in temps.items():
            with contextlib.suppress(OSError):
                self.tree.fs.unlink(staged[index].fd, tmp)

    def write_all(self, writes: list[DiskOp]) -> None:
        staged = [self._stage(op) for op in writes]
        temps = self._temps_in_parallel(staged) if len(staged) >= PARALLEL_WRITES_FROM else {}
        try:
            for index, item in enumerate(staged):
                if index % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                    self._tick()
                tmp = temps.pop(index, None)
                if tmp is None:
                    tmp = self._make_temp(item.fd, item.op, item.mode, self._data(item.op))
                try:
                    self._publish(item.op, item.fd, item.name, tmp)
                except BaseException:
                    with contextlib.suppress(OSError):
                        self.tree.fs.unlink(item.fd, tmp)
                    raise
        finally:
            self._drop_temps(staged, temps)

    def _publish(self, op: DiskOp, fd: Dir, name: str, tmp: str) -> None:
        faults.fire("create" if self.identity.get(op.path) is None else "replace", op.path)
        st = self._expect_now(op.path, fd, name)
        if st is None:
            try:
                self.tree.move(fd, tmp, fd, name)
            except FileExistsError:
                raise ConflictError(op.path, "was created on disk while the restore was running") from None
            now = Identity.of(self.tree.fs.lstat(fd, name))
            self.undo.append(("created", op.path, "", now))
            return
        if stat.S_ISDIR(st.st_mode):
            self.tree.forget(op.path)
            self.swept.append(op.path)
        if not stat.S_ISDIR(st.st_mode) and self.tree.exchange(fd, tmp, fd, name):
            # Atomic swap: readers never see the path missing. ``tmp`` now holds the old entry.
            moved = Identity.of(self.tree.fs.lstat(fd, tmp))
            if not moved.moved(self.identity.get(op.path)):
                self.tree.exchange(fd, tmp, fd, name)
                raise ConflictError(op.path, "changed on disk while the restore was running")
            slot = self._stash(op.path, fd, tmp)
        else:
            slot = self._to_trash(op.path, fd, name)
            self.tree.move(fd, tmp, fd, name)
        now = Identity.of(self.tree.fs.lstat(fd, name))
        self.undo.append(("replaced", op.path, slot, now))

    def run(self, ops: list[DiskOp]) -> None:
        self.prepare(ops)
        deletes = [op for op in ops if op.kind == "delete"]
        for index, op in enumerate(deletes):
            if index % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                self._tick()
            self.delete(op)
        for op in deletes:
            self.prune(op.path)
        for op in ops:
            if op.kind == "chmod":
                self.chmod(op)
        self.write_all([op for op in ops if op.kind == "write"])

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress()

    def renames(self) -> dict[str, int]:
        """Path → renames this apply made at that name: a new entry moved there (1), an old
        one moved away (1), or both (2)."""
        out: dict[str, int] = {}
        for kind, rel, _, _ in self.undo:
            n = {"created": 1, "replaced": 2, "moved": 1}.get(kind)
            if n is not None:
                out[rel] = out.get(rel, 0) + n
        return out

    def verify(self) -> dict[str, str]:
        """Every entry this apply put in place is still the very one it wrote."""
        bad: dict[str, str] = {}
        for kind, rel, _, ident in self.undo:
            if kind in ("created", "replaced"):
                try:
                    st = self.tree.lstat(rel)
                except (OSError, EscapeError) as exc:
                    bad[rel] = f"cannot check after writing: {exc}"
                    continue
                if st is None or Identity.of(st) != ident:
                    bad[rel] = "changed on disk while the restore was running"
        return bad

    # ------------------------------------------------------------------ rollback / commit
    def _undo_one(self, kind: _UndoKind, rel: str, arg: Slot | str, ident: Identity | None) -> None:
        faults.fire("rollback", rel)
        if kind == "mkdir":
            self.tree.forget(rel)
            fd, name = self.tree.parent(rel)
            self.tree.fs.rmdir(fd, name)
            return
        if kind == "rmdir":
            fd, name = self.tree.parent(rel)
            with contextlib.suppress(FileExistsError):
                self.tree.fs.mkdir(fd, name, 0o755)
            return
        fd, name = self.tree.parent(rel)
        if kind == "chmod":
            ffd = self.tree.fs.open_file(fd, name)
            try:
                self.tree.fs.fchmod(ffd, fd, name, int(str(arg), 8))
            finally:
                os.close(ffd)
            return
        if kind in ("created", "replaced"):
            st = self.tree.lstat_at(fd, name)
            if st is None or Identity.of(st) != ident:
                raise ConflictError(rel, "changed on disk during the rollback; left as it is")
            self._stash(rel, fd, name)
        if kind in ("replaced", "moved"):
            assert isinstance(arg, tuple)
            self.tree.move(self._slot_fd(arg), arg[1], fd, name)
            self.stashed.remove(arg)

    def rollback(self) -> list[str]:
        """Undo everything, newest first. Returns what could not be undone (the trash keeps it)."""
        problems: list[str] = []
        for kind, rel, arg, ident in reversed(self.undo):
            try:
                self._undo_one(kind, rel, arg, ident)
            except (OSError, EscapeError, ConflictError) as exc:
                if kind == "mkdir" and isinstance(exc, OSError) and exc.errno == errno.ENOTEMPTY:
                    continue
                problems.append(f"{rel}: {exc}")
        self.undo.clear()
        if problems and self.ws_trash is not None:
            problems.append(f"what could not be put back is kept in {self.ws_trash} at the workspace root")
        self.close(discard=not problems)
        return problems

    def commit(self) -> None:
        """The apply stands: drop the trash (unlinks only, nothing is read)."""
        self.undo.clear()
        self.close(discard=True)

    def close(self, *, discard: bool) -> None:
        if discard:
            # Entries stashed in the workspace are removed now (synchronously: nothing of them
            # may outlive the apply where a capture could see it).
            for rel_dir, name in self.stashed:
                if rel_dir is not None:
                    with contextlib.suppress(OSError, EscapeError):
                        self.tree.fs.remove_tree(self.tree.directory(rel_dir), name)
            self.stashed.clear()
            if self.ws_trash is not None:
                with contextlib.suppress(OSError, EscapeError):
                    self.tree.fs.remove_tree(self.tree.directory(""), self.ws_trash)
        self.tree.close()
        if self.trash_fd is not None:
            self.tree.fs.close(self.trash_fd)
            self.trash_fd = None
        if discard and self.trash_path is not None:
            # Unlinking what the restore replaced is not on the user's clock: a thread does it
            # (the interpreter waits for it at exit; a leftover trash directory is harmless).
            discard_later(self.trash_path)


def apply_disk(
    workspace: Path, trash: Path | None, ops: list[DiskOp], progress: Progress | None = None
) -> ApplyResult:
    """Apply ``ops`` (each path at most once) as one transaction: all of them, or none.
    ``trash``: a directory of the store for what the apply moves away (``None``: the workspace
    trash only, for writers without a store of their own).
    ``progress`` is called now and then (from this thread) while it runs. A path that is not a
    plain workspace path (:func:`check_rel`: ``..``, ``.``, empty, absolute, ``.git``, NUL) fails
    the whole apply before anything is written, whoever built the plan."""
    for op in ops:
        try:
            check_rel(op.path)
        except EscapeError as exc:
            return ApplyResult(ok=False, error=str(exc), failed_path=op.path, rolled_back=True)
    tx = DiskTransaction(workspace, trash, progress if len(ops) >= DRAIN_FROM else None)
    try:
        tx.run(ops)
        bad = tx.verify()
        if bad:
            first = next(iter(bad))
            raise ConflictError(first, bad[first])
    except ConflictError as exc:
        problems = tx.rollback()
        return ApplyResult(
            ok=False,
            error=str(exc) + (f"; rollback incomplete: {'; '.join(problems)}" if problems else ""),
            failed_path=exc.path,
            rolled_back=not problems,
            conflicts={exc.path: exc.why},
        )
    except (OSError, ApplyError, EscapeError) as exc:
        problems = tx.rollback()
        path = exc.path if isinstance(exc, ApplyError) else getattr(exc, "filename", None)
        return ApplyResult(
            ok=False,
            error=str(exc) + (f"; rollback incomplete: {'; '.join(problems)}" if problems else ""),
            failed_path=path if isinstance(path, str) else None,
            rolled_back=not problems,
            damaged=isinstance(exc, SourceMissingError),
        )
    swept, renames = list(tx.swept), tx.renames()
    tx.commit()
    return ApplyResult(ok=True, swept=swept, renames=renames)
