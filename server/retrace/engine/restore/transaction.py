"""A restore in flight, and the narrow surface of the engine that restore works through.

Transaction contract: a transaction is opened (its intent journaled) after the pre-restore
state is recorded (the head, right after a safety checkpoint) and before anything is written;
it is closed exactly once, by :meth:`RestoreTransaction.commit` (the ``restore`` checkpoint,
then ``applied``) or :meth:`RestoreTransaction.abandon` (no checkpoint: the outcome it ended with
is journaled). ``abandon`` writes no file: undoing what an applier wrote is that applier's own
business (the disk applier rolls its own operations back before it abandons; an editor-applied
restore that fails its check is abandoned as ``failed`` with the files as the editor left them,
and says so: ``rolledBack: false``). A transaction left open by a crash is rolled back by
the next open of the store (:mod:`retrace.engine.restore.recovery`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from retrace.engine.capture import Capturer
from retrace.engine.changes import CheckpointReads
from retrace.engine.errors import RetraceError
from retrace.engine.manifest import Delta
from retrace.engine.models import Checkpoint, CheckpointKind, RestorePlan
from retrace.engine.restore.recovery import RecoveryPort, begin_restore, end_restore
from retrace.engine.store.journal import JournalWriter


class RestoreHost(CheckpointReads, RecoveryPort, Protocol):
    """Exactly what restore needs from the engine (recovery's port: a transaction journals its
    intent and its end through it)."""

    @property
    def capturer(self) -> Capturer | None: ...

    def last_change(self, path: str) -> Checkpoint | None:
        """The checkpoint in the head's ancestry that last changed ``path``."""
        ...

    def commit_delta(self, kind: CheckpointKind, delta: Delta, **fields: Any) -> Checkpoint: ...

    def record_foreign(self, kind: CheckpointKind, context: Mapping[str, Any]) -> Checkpoint | None: ...

    def journal_writer(self, session_id: str | None = None) -> JournalWriter: ...

    def require_writer(self) -> None: ...


class RestoreTransaction:
    """One restore in flight (see the module contract). Used by the disk applier and by the
    editor-applied path alike."""

    def __init__(self, host: RestoreHost, plan: RestorePlan) -> None:
        self._host = host
        self.plan = plan
        self.id = begin_restore(host, plan)
        self.outcome: str | None = None
        """``None`` while open; then ``applied`` or the outcome :meth:`abandon` recorded."""

    @property
    def open(self) -> bool:
        return self.outcome is None

    def commit(self, delta: Delta, **fields: Any) -> Checkpoint:
        """Commit the ``restore`` checkpoint for ``delta`` and close the transaction."""
        self._require_open()
        target = self._host.get(self.plan.target_id)
        cp = self._host.commit_delta(
            "restore",
            delta,
            label=f"restore {target.id}",
            session_id=target.session_id,
            restored_from=target.id,
            **fields,
        )
        self._close("applied")
        return cp

    def abandon(self, outcome: str = "rolledBack") -> None:
        """Close the transaction without a checkpoint, journaling ``outcome`` (the workspace is
        back at the pre-restore state, or the outcome says why not). Writes no file. No-op once
        closed."""
        if self.open:
            self._close(outcome)

    def _require_open(self) -> None:
        if not self.open:
            raise RetraceError(f"restore transaction {self.id} is already closed ({self.outcome})")

    def _close(self, outcome: str) -> None:
        end_restore(self._host, self.id, outcome)
        self.outcome = outcome
