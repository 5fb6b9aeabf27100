"""What changed: file changes between two checkpoints (or a checkpoint and the workspace), their
unified patch text, the bytes of a file at a checkpoint, and the line counts a checkpoint's
commit left out (:meth:`Changes.count_lines`: computed on request, bounded, kept in memory).

The engine is reached only through :class:`ChangesHost` (no import of the engine module).
"""

# String paths and os-level calls on purpose: one read per changed path.
# ruff: noqa: PTH115, PTH118

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from retrace.engine.capture.fs import read_regular
from retrace.engine.commit import count_lines, file_changes
from retrace.engine.config import EngineConfig
from retrace.engine.errors import BlobCorrupt, RetraceError
from retrace.engine.line_stats import unified_diff_lines
from retrace.engine.manifest import Delta, Manifest, same
from retrace.engine.models import Checkpoint, FileChange, FileEntry
from retrace.engine.store.blobs import BlobStore
from retrace.text import decode_text, quote_name

log = logging.getLogger(__name__)

UNIFIED_DIFF_BUDGET_S = 2.0
"""Time for the line diffs of one ``unified_diff`` call (all files): past it a file's hunks are
coarser (still a correct patch), never a stalled request."""


class CheckpointReads(Protocol):
    """The engine's read surface over recorded history, shared by the rooms that work through a
    narrow host (changes here, restore in :mod:`retrace.engine.restore.transaction`)."""

    config: EngineConfig

    @property
    def head_manifest(self) -> Manifest:
        """The head's manifest, live: read it, never mutate it."""
        ...

    @property
    def blobs(self) -> BlobStore: ...

    def get(self, cp_id: str) -> Checkpoint: ...

    def rel(self, path: str | Path) -> str: ...

    def entries_at(self, cid: str, paths: Iterable[str]) -> dict[str, FileEntry | None]: ...

    def changed_between(self, a: str, b: str) -> set[str]: ...

    def content(self, e: FileEntry | None) -> bytes | None: ...


class ChangesHost(CheckpointReads, Protocol):
    """Exactly what the changes room needs from the engine."""

    workspace: Path

    @property
    def head(self) -> Checkpoint: ...

    def unrecorded_changes(self) -> Delta:
        """Changes on disk relative to the head, without storing or committing anything."""
        ...


def read_disk(workspace: Path, rel: str, max_bytes: int) -> bytes | None:
    """Bytes of ``rel`` on disk now (a symlink's target); ``None`` if absent, special or too big."""
    p = os.path.join(workspace, rel)
    try:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(p))
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        data = read_regular(p, max_bytes + 1)  # never blocks: it may have become a FIFO
        return data if len(data) <= max_bytes else None
    except OSError:
        return None


class Changes:
    """Diffs and file contents over a :class:`ChangesHost`."""

    def __init__(self, host: ChangesHost) -> None:
        self._host = host

    def _read_disk(self, rel: str) -> bytes | None:
        return read_disk(self._host.workspace, rel, self._host.config.max_file_bytes)

    def count_lines(self, cp: Checkpoint) -> Checkpoint:
        """``cp`` with the line counts its commit left out (``counted=False``) computed now,
        within :data:`~retrace.engine.commit.COUNT_LINES_BUDGET_S`. The counts are kept on the
        in-memory checkpoint (every later reader sees them), never rewritten in the journal:
        after a restart they are counted again when someone asks."""
        if cp.parent is None or all(f.counted for f in cp.files):
            return cp
        host = self._host
        paths = [f.path for f in cp.files if not f.counted]
        before = host.entries_at(cp.parent, paths)
        after = host.entries_at(cp.id, paths)
        cp.files = count_lines(cp.files, before, after, content=host.content)
        return cp

    def diff(self, a: str, b: str | None = None) -> list[FileChange]:
        """Changes from checkpoint ``a`` to checkpoint ``b`` (``None``: the current workspace)."""
        host = self._host
        ca = host.get(a)
        if b is not None:
            cb = host.get(b)
            paths = host.changed_between(ca.id, cb.id)
            old = host.entries_at(ca.id, paths)
            new: Delta = host.entries_at(cb.id, paths)
            return file_changes(old, new, content=host.content, disk=None)[0]
        cur = host.unrecorded_changes()
        head = host.head_manifest
        paths = host.changed_between(ca.id, host.head.id) | set(cur)
        old = host.entries_at(ca.id, paths)
        new = {p: (cur[p] if p in cur else head.get(p)) for p in paths}
        new = {p: e for p, e in new.items() if not same(old[p], e)}
        return file_changes(old, new, content=host.content, disk=self._read_disk)[0]

    def unified_diff(self, a: str, b: str | None = None, paths: Iterable[str] | None = None) -> str:
        """Unified patch text from ``a`` to ``b`` (``None``: current workspace)."""
        changes = self.diff(a, b)
        wanted = {self._host.rel(p) for p in paths} if paths is not None else None
        deadline = time.perf_counter() + UNIFIED_DIFF_BUDGET_S
        out: list[str] = []
        for ch in changes:
            if wanted is not None and ch.path not in wanted and ch.old_path not in wanted:
                continue
            out.extend(self._patch(a, b, ch, deadline))
        return "".join(out)

    def _patch(self, a: str, b: str | None, ch: FileChange, deadline: float) -> list[str]:
        """Patch lines of one change (a rename header, a binary note or the hunks)."""
        out: list[str] = []
        src = ch.old_path or ch.path
        old = self._side(a, src)
        new = self._side(b, ch.path)
        if ch.status == "renamed":
            out.append(f"rename from {quote_name(src)}\nrename to {quote_name(ch.path)}\n")
            if old == new:
                return out
        if (old is not None and decode_text(old) is None) or (new is not None and decode_text(new) is None):
            out.append(f"Binary files {quote_name('a/' + src)} and {quote_name('b/' + ch.path)} differ\n")
            return out
        a_lines = (old or b"").decode().splitlines(keepends=True)
        b_lines = (new or b"").decode().splitlines(keepends=True)
        lines, approximate = unified_diff_lines(
            a_lines,
            b_lines,
            # Names quoted as git quotes them in a patch (``core.quotePath``): a name's newline
            # or escape sequence can neither break the patch nor drive a terminal.
            quote_name(f"a/{src}") if old is not None else "/dev/null",
            quote_name(f"b/{ch.path}") if new is not None else "/dev/null",
            timeout_s=max(deadline - time.perf_counter(), 0.0),
        )
        if approximate:
            log.info("diff of %s hit its time budget: hunks are correct but coarser", ch.path)
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return out

    def _side(self, cp: str | None, path: str) -> bytes | None:
        if cp is None:
            return self._read_disk(path)
        try:
            return self.file_content(cp, path)
        except BlobCorrupt:
            raise  # damaged content is never shown, not even as an absent file
        except RetraceError:
            return None

    def file_content(self, cp_id: str, path: str) -> bytes | None:
        """Bytes of ``path`` at checkpoint ``cp_id``; ``None`` if the file does not exist there.
        Raises :class:`RetraceError` when it existed but its content was not stored."""
        host = self._host
        cp = host.get(cp_id)
        rel = host.rel(path)
        e = host.entries_at(cp.id, [rel])[rel]
        if e is None:
            return None
        if e.kind == "symlink":
            return os.fsencode(e.target or "")
        if e.hash is None:
            raise RetraceError(
                f"{rel} at checkpoint {cp.id} was not stored: {e.unstored or 'unknown reason'}"
            )
        try:
            return host.blobs.get(e.hash)
        except BlobCorrupt as exc:
            raise BlobCorrupt(exc.blob_id, f"{exc.reason} ({rel} at checkpoint {cp.id})") from None
