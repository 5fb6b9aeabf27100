"""Undo exactly the last restore, whatever its mode, and whether to ask for a restore's reason.

THE owner of "the last restore". Every restore that changed something — code applied, a
conversation moved, or both; an undo is a restore too — is journaled as one ``restoreRecord``
event (:func:`record_of` builds it, pure) holding what its undo needs: where the code was before
it (its safety checkpoint, else the head its ``restore`` checkpoint replaced) and, when it moved a
conversation, that session's head and terminal state before it.

The last restore (:func:`newest`, pure) is the newest record over the store's journals, by the
time stamp on its line (restores are seconds apart and one process at a time holds the store);
a code restore applied by a front end that wrote no record (an older version) still counts,
through its ``restore`` statistics event, whose checkpoint's parent is where the code was. It is
read from the journals (:func:`last_restore`), so it holds across a server restart.

Undoing it (:func:`undo_plan`, pure): ``code`` → the code back to ``code_before``;
``conversation`` → the session's head and terminal back to what they were; ``both`` → both (the
code first, the conversation only when the code part applied or had nothing to do). The undo's
own record is marked ``undo``, so undoing it again is a redo; :func:`undid_words` says which.

A restore's reason is asked rarely (:func:`ask_reason`, pure): only after a code restore that
changed files, never after an undo or a conversation-only restore, and at most once per
:data:`REASON_INTERVAL_S` per server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, RestoreApplied, RestoreMode, RestoreOutcome, TerminalState
from retrace.engine.store.events import RestoreRecordEvent, RestoreStatsEvent

REASON_INTERVAL_S = 30 * 60.0
"""At most one reason question per this many seconds (per server)."""

_NAME_MAX = 60
"""A target's name in the words of an undo is cut to this many characters (a toast's line)."""

_MODE_WORDS: dict[str, str] = {
    "code": "code",
    "conversation": "conversation",
    "both": "code and conversation",
}


@dataclass(frozen=True)
class UndoPlan:
    """What undoing one restore does: the code back to ``code_to`` (``None``: code untouched)
    and, when ``session_id`` is set, that conversation back to ``head`` with ``terminal``."""

    code_to: str | None
    session_id: str | None
    head: str | None
    terminal: TerminalState | None

    @property
    def mode(self) -> RestoreMode:
        if self.code_to is not None and self.session_id is not None:
            return "both"
        return "code" if self.code_to is not None else "conversation"


def undo_plan(record: RestoreRecordEvent) -> UndoPlan | None:
    """How to undo ``record`` (``None``: it changed nothing that can be put back)."""
    if record.code_before is None and record.session_id is None:
        return None
    return UndoPlan(
        code_to=record.code_before,
        session_id=record.session_id,
        head=record.conversation_before if record.session_id is not None else None,
        terminal=record.terminal_before,
    )


def restore_label(mode: RestoreMode, target: Checkpoint) -> str:
    """How a restore is named to the user: "Restore conversation to “edit_file a.py”"."""
    name = target.label or (f"{target.tool} {target.id}" if target.tool else f"checkpoint {target.id}")
    if len(name) > _NAME_MAX:
        name = name[: _NAME_MAX - 1].rstrip() + "…"
    return f"Restore {_MODE_WORDS.get(mode, mode)} to “{name}”"


def undid_words(record: RestoreRecordEvent) -> str:
    """What an undo of ``record`` says it did: "Undid: …", or "Redid: …" for an undo's undo."""
    return f"{'Redid' if record.undo else 'Undid'}: {record.label}"


def code_before(outcome: RestoreOutcome) -> str | None:
    """Where the code was before an applied restore: its safety checkpoint, else the parent of
    its ``restore`` checkpoint (``None``: no code changed)."""
    if not isinstance(outcome, RestoreApplied) or outcome.dry_run:
        return None
    if outcome.safety_checkpoint_id is not None:
        return outcome.safety_checkpoint_id
    return outcome.checkpoint.parent if outcome.checkpoint is not None else None


@dataclass(frozen=True)
class ConversationMove:
    """A conversation a restore moved, and where its head and terminal were before."""

    session_id: str
    head_before: str | None
    terminal_before: TerminalState


def record_of(
    target_id: str,
    outcome: RestoreOutcome,
    moved: ConversationMove | None,
    *,
    label: str,
    undoing: RestoreRecordEvent | None = None,
) -> RestoreRecordEvent | None:
    """The record of a finished restore (``None``: a dry run, or nothing changed). An undo's
    record keeps the undone restore's label and flips ``undo``."""
    before = code_before(outcome)
    if outcome.dry_run or (before is None and moved is None):
        return None
    mode: RestoreMode = (
        "both" if before is not None and moved is not None else "code" if before else "conversation"
    )
    cp = outcome.checkpoint if isinstance(outcome, RestoreApplied) else None
    return RestoreRecordEvent(
        mode=mode,
        target_id=target_id,
        label=undoing.label if undoing is not None else label,
        checkpoint_id=cp.id if cp is not None else None,
        code_before=before,
        session_id=moved.session_id if moved is not None else None,
        conversation_before=moved.head_before if moved is not None else None,
        terminal_before=moved.terminal_before if moved is not None else None,
        undo=(not undoing.undo) if undoing is not None else False,
    )


def remember(
    engine: Engine,
    target_id: str,
    mode: RestoreMode,
    outcome: RestoreOutcome,
    moved: ConversationMove | None,
    *,
    undoing: RestoreRecordEvent | None = None,
) -> RestoreRecordEvent | None:
    """Journal a finished restore for its undo, in the engine's current session (every front end:
    the server, the command line). Nothing for a dry run or a restore that changed nothing."""
    label = restore_label(mode, engine.get(target_id))
    event = record_of(target_id, outcome, moved, label=label, undoing=undoing)
    if event is not None:
        engine.append_event(event)
    return event


Candidate = RestoreRecordEvent | RestoreStatsEvent


def newest(events: Sequence[Candidate]) -> Candidate | None:
    """The last restore among ``events`` (any journals, any order): the newest record, or an
    applied code restore's statistics event no record claims; equal times: the later one."""
    claimed = {e.checkpoint_id for e in events if isinstance(e, RestoreRecordEvent) and e.checkpoint_id}
    best: Candidate | None = None
    for event in events:
        if isinstance(event, RestoreStatsEvent) and (
            event.kind != "applied" or event.checkpoint_id is None or event.checkpoint_id in claimed
        ):
            continue
        if best is None or event.ts >= best.ts:
            best = event
    return best


def from_stats(engine: Engine, event: RestoreStatsEvent) -> RestoreRecordEvent | None:
    """A record for a code restore only its statistics event tells of (older front ends)."""
    if event.checkpoint_id is None:
        return None
    try:
        cp = engine.get(event.checkpoint_id)
        target = engine.get(event.target_id) if event.target_id else None
    except RetraceError:  # dropped by retention since: nothing left to undo
        return None
    label = restore_label("code", target) if target is not None else f"Restore code ({cp.id})"
    return RestoreRecordEvent(
        mode="code",
        target_id=event.target_id or cp.id,
        label=label,
        checkpoint_id=cp.id,
        code_before=cp.parent,
        ts=event.ts,
    )


def last_restore(engine: Engine) -> RestoreRecordEvent | None:
    """The store's last restore, read from every session journal (run in the engine's gate)."""
    found: list[Candidate] = []
    for session_id in engine.sessions():
        for event in engine.events(session_id, only=(RestoreRecordEvent, RestoreStatsEvent)):
            if isinstance(event, RestoreRecordEvent | RestoreStatsEvent):
                found.append(event)
    last = newest(found)
    if isinstance(last, RestoreStatsEvent):
        return from_stats(engine, last)
    return last


def git_reference(engine: Engine, target_id: str, undoing: RestoreRecordEvent | None) -> str:
    """The checkpoint whose recorded git an undo is checked against: the undone restore's own
    checkpoint (git as it was when that restore replaced the files), so an undo asks only when
    HEAD or the branch moved since the restore; a plain restore (or one whose checkpoint is
    gone) checks its target."""
    if undoing is not None and undoing.checkpoint_id:
        try:
            return engine.get(undoing.checkpoint_id).id
        except RetraceError:
            pass
    return target_id


def ask_reason(outcome: RestoreOutcome, *, undo: bool, last_asked: float | None, now: float) -> bool:
    """Whether the client may offer the reason question after this restore: a code restore that
    changed files (never a conversation-only one, never an undo, never a dry run), at most once
    per :data:`REASON_INTERVAL_S`."""
    if undo or outcome.dry_run or not isinstance(outcome, RestoreApplied) or outcome.mode == "conversation":
        return False
    if not any(f.status in ("restored", "merged") for f in outcome.files):
        return False
    return last_asked is None or now - last_asked >= REASON_INTERVAL_S
