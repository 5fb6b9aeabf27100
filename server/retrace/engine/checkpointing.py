"""The one commit path: capture (or take) a delta, build its checkpoint, append it durably, and
only then advance the in-memory head.

Every checkpoint takes :meth:`Committer.commit`: the ``baseline`` (no parent, the whole
manifest as its delta), a tool call's checkpoint, an ``external`` or ``safety`` capture of
changes nobody announced, and a ``restore``. The committer works on an explicit, narrow view of
the engine (:class:`CommitHost`) and mutates only the :class:`History` it is given.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from retrace.engine.capture import Capturer
from retrace.engine.commit import build_checkpoint, parent_copy
from retrace.engine.errors import RetraceError, StorageFull
from retrace.engine.gitstate import GitState, GitStateReader
from retrace.engine.history import History
from retrace.engine.manifest import Delta, Manifest, delta_to_json, encode_snapshot, needs_snapshot, same
from retrace.engine.models import Checkpoint, CheckpointKind, FileEntry, Unrecoverable
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.events import CheckpointEvent
from retrace.engine.store.journal import JournalWriter

CONTEXT_FIELDS = frozenset(
    {
        "label",
        "session_id",
        "turn_id",
        "tool",
        "tool_call_id",
        "editor_state",
        "conversation",
        "terminal",
        "meta",
    }
)
"""What a caller may stamp on a captured checkpoint (``record_foreign``'s context)."""


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Store write failures as one clear RetraceError line (disk full → StorageFull)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageFull(f"the disk holding the Retrace store is full: {what} ({exc})") from exc
        raise RetraceError(f"store write failed: {what} ({exc})") from exc


class CommitHost(Protocol):
    """What the commit path needs of the engine."""

    @property
    def history(self) -> History: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def capturer(self) -> Capturer | None: ...

    @property
    def session_id(self) -> str: ...

    def new_id(self) -> str: ...

    def journal_writer(self, session_id: str | None = None) -> JournalWriter: ...

    def require_writer(self) -> None: ...

    def rels(self, paths: Iterable[str | Path]) -> list[str]: ...

    def content(self, e: FileEntry | None) -> bytes | None: ...

    @property
    def workspace(self) -> Path: ...


def apply_delta(m: Manifest, delta: Delta) -> None:
    """Apply ``delta`` to the manifest ``m`` in place (``None``: the path is gone)."""
    for p, e in delta.items():
        if e is None:
            m.pop(p, None)
        else:
            m[p] = e


class Committer:
    def __init__(self, host: CommitHost) -> None:
        self._host = host
        self._git: GitStateReader | None = None

    def git_state(self) -> GitState | None:
        """The workspace repository's HEAD, branch and index hint now (``engine/gitstate.py``;
        ``None``: no repository), stamped on every checkpoint as ``meta["git"]``."""
        if self._git is None:
            self._git = GitStateReader(self._host.workspace)
        return self._git.read()

    def commit(
        self, kind: CheckpointKind, delta: Delta, *, capture_ms: float = 0.0, **fields: Any
    ) -> Checkpoint:
        """Commit ``delta`` as a checkpoint on top of the head (a ``baseline`` starts the tree:
        no parent, ``delta`` is the whole manifest). ``fields``: the checkpoint's context
        (:data:`CONTEXT_FIELDS`) and ``restored_from``."""
        host = self._host
        host.require_writer()
        history = host.history
        baseline = kind == "baseline"
        base: Manifest = {} if baseline else history.head
        delta = {p: e for p, e in delta.items() if not same(base.get(p), e)}
        cid = host.new_id()
        parent = None if baseline else history.head_id
        sid = fields.pop("session_id", None) or host.session_id
        seq = history.next_seq
        fields["meta"] = self._git_meta(fields.get("meta"), parent)
        cp = build_checkpoint(
            cid=cid,
            parent=parent,
            session_id=sid,
            kind=kind,
            delta=delta,
            old=base,
            content=host.content,
            missed=self._not_captured(),
            capture_ms=capture_ms,
            **fields,
        )
        depth = 0 if parent is None else history.snap_depth.get(parent, 0) + 1 + len(delta)
        new_head = base
        snapshot: str | None = None
        if parent is None or needs_snapshot(depth, len(base)):
            new_head = dict(base)
            apply_delta(new_head, delta)
            snapshot = host.blobs.put(encode_snapshot(new_head))
        event = CheckpointEvent(
            checkpoint=cp,
            delta=None if baseline else delta_to_json(delta),
            snapshot=snapshot,
            # A copy of the parent's data: one damaged journal line then loses only its own
            # checkpoint (replay rebuilds it from this copy).
            parent_delta=parent_copy(
                history.cps.get(parent) if parent is not None else None,
                history.deltas.get(parent) if parent is not None else None,
                history.snapshots.get(parent) if parent is not None else None,
            ),
            # Proof that this store wrote it, with its local creation number (history/origin.py).
            origin=history.origins.stamp(sid, cid, seq),
        )
        with storage_errors(f"checkpoint {cid} was not recorded"):
            host.journal_writer(sid).append(event)
        self._advance(cp, delta, new_head, snapshot, depth, seq=seq)
        return cp

    def _git_meta(self, meta: dict[str, Any] | None, parent: str | None) -> dict[str, Any] | None:
        """``meta`` with the repository's state now (``git``) and, when HEAD or the branch moved
        since the parent checkpoint, the parent's (``gitBefore``): a row then says what git did."""
        state = self.git_state()
        if state is None:
            return meta
        out = dict(meta or {})
        out.setdefault("git", state.to_meta())
        before_cp = self._host.history.cps.get(parent) if parent is not None else None
        before = GitState.from_meta(before_cp.meta.get("git")) if before_cp is not None else None
        if before is not None and (before.head, before.branch) != (state.head, state.branch):
            out.setdefault("gitBefore", before.to_meta())
        return out

    def _advance(
        self, cp: Checkpoint, delta: Delta, new_head: Manifest, snapshot: str | None, depth: int, *, seq: int
    ) -> None:
        """Committed: now (and only now) update memory."""
        history = self._host.history
        baseline = cp.kind == "baseline"
        cap = self._host.capturer
        if cap is not None and cap.dirs is not None and not baseline:
            cap.dirs.apply(history.head, delta)
        if new_head is history.head:
            apply_delta(history.head, delta)
        else:
            history.head = new_head
        history.add(cp, None if baseline else delta, snapshot, depth, seq)
        if snapshot is not None:
            history.remember_snapshot(snapshot, history.head)
        history.head_id = cp.id
        if baseline:
            history.prov = {}
        for p in () if baseline else delta:
            history.prov[p] = cp.id

    def _not_captured(self) -> list[Unrecoverable]:
        """Directories the capture could not list: the checkpoint cannot claim ``full``."""
        cap = self._host.capturer
        missed = cap.take_not_captured() if cap is not None else {}
        return [Unrecoverable(path=p, reason=f"not captured: {r}") for p, r in sorted(missed.items())]

    def _capturer(self) -> Capturer:
        self._host.require_writer()
        cap = self._host.capturer
        assert cap is not None
        return cap

    def baseline(self) -> Checkpoint:
        """The first checkpoint of a store: the whole workspace."""
        t0 = time.perf_counter()
        manifest = self._capturer().baseline()
        return self.commit(
            "baseline",
            dict(manifest),
            label="baseline",
            meta={"files": len(manifest)},
            capture_ms=(time.perf_counter() - t0) * 1000,
        )

    def checkpoint(
        self,
        label: str = "",
        changed_paths: Iterable[str | Path] | None = None,
        *,
        kind: CheckpointKind = "manual",
        **fields: Any,
    ) -> Checkpoint:
        """Capture and commit a checkpoint (one durable journal append).

        ``changed_paths`` (workspace-relative or absolute inside the workspace) captures exactly
        those paths: cost independent of workspace size. ``None`` detects every created,
        modified, deleted or renamed file since the head (watcher dirty set when healthy, stat
        walk otherwise). A checkpoint is committed even when nothing changed (``files == []``).
        """
        unknown = set(fields) - CONTEXT_FIELDS
        if unknown:
            raise TypeError(f"unknown checkpoint field(s): {', '.join(sorted(unknown))}")
        cap = self._capturer()
        t0 = time.perf_counter()
        rels = None if changed_paths is None else self._host.rels(changed_paths)
        with storage_errors("the checkpoint was not recorded"):
            delta = cap.capture(self._host.history.head, rels)
        return self.commit(kind, delta, label=label, capture_ms=(time.perf_counter() - t0) * 1000, **fields)

    def record_foreign(self, kind: CheckpointKind, context: Mapping[str, Any]) -> Checkpoint | None:
        """Capture unannounced changes since the head as a ``kind`` checkpoint (``None``: none)."""
        cap = self._capturer()
        t0 = time.perf_counter()
        delta = cap.detect(self._host.history.head)
        if not delta:
            return None
        unknown = set(context) - CONTEXT_FIELDS
        if unknown:
            raise RetraceError(f"unknown checkpoint field(s): {', '.join(sorted(unknown))}")
        return self.commit(kind, delta, capture_ms=(time.perf_counter() - t0) * 1000, **context)
