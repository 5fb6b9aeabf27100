"""The "last restore" rule (``app/restore_undo.py``): table tests of its pure parts — what undoing a
record does, the record a finished restore leaves, which restore is the last, what the undo
says, when the reason question may be asked — and, over a real store, that the last restore is
found in the journals after a reopen, including a code restore only its statistics tell of."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.journal_events import typed

from retrace.app.restore import RestoreRequest, restore_code_on_disk
from retrace.app.restore_undo import (
    REASON_INTERVAL_S,
    ConversationMove,
    UndoPlan,
    ask_reason,
    last_restore,
    newest,
    record_of,
    restore_label,
    undid_words,
    undo_plan,
)
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.models import (
    Checkpoint,
    FileOutcome,
    NothingToRestore,
    RestoreApplied,
    RestoreConflict,
    RestoreOutcome,
    RestorePreview,
    TerminalState,
)
from retrace.engine.store.events import RestoreRecordEvent, RestoreStatsEvent

TERM = TerminalState(cwd="sub")


def cp(cid: str, parent: str | None = "p0") -> Checkpoint:
    return Checkpoint.model_validate(
        {
            "id": cid,
            "parent": parent,
            "sessionId": "s1",
            "kind": "restore",
            "createdAt": "2026-01-01T00:00:00Z",
        }
    )


def applied(
    mode: str = "code", *, files: int = 1, skipped: int = 0, unchanged: int = 0, safety: str | None = "safe1"
) -> RestoreApplied:
    outs = [FileOutcome(path=f"f{i}", action="overwrite", status="restored") for i in range(files)]
    outs += [FileOutcome(path=f"s{i}", action="conflict", status="skipped") for i in range(skipped)]
    outs += [FileOutcome(path=f"u{i}", action="overwrite", status="unchanged") for i in range(unchanged)]
    return RestoreApplied.model_validate(
        {
            "targetId": "t1",
            "mode": mode,
            "files": [o.model_dump(by_alias=True) for o in outs],
            "skipped": [f"s{i}" for i in range(skipped)],
            "checkpoint": cp("r1").model_dump(by_alias=True),
            "safetyCheckpointId": safety,
        }
    )


def rec(mode: str, **fields: object) -> RestoreRecordEvent:
    return RestoreRecordEvent.model_validate({"mode": mode, "targetId": "t1", "label": "Restore x", **fields})


@pytest.mark.parametrize(
    ("record", "plan"),
    [
        (rec("code", codeBefore="c0"), UndoPlan("c0", None, None, None)),
        (
            rec("conversation", sessionId="s1", conversationBefore="m9", terminalBefore={"cwd": "sub"}),
            UndoPlan(None, "s1", "m9", TERM),
        ),
        (rec("conversation", sessionId="s1", conversationBefore=None), UndoPlan(None, "s1", None, None)),
        (
            rec("both", codeBefore="c0", sessionId="s1", conversationBefore="m9"),
            UndoPlan("c0", "s1", "m9", None),
        ),
        (rec("code"), None),
    ],
)
def test_undo_plan_puts_back_exactly_what_the_restore_changed(
    record: RestoreRecordEvent, plan: UndoPlan | None
) -> None:
    assert undo_plan(record) == plan
    if plan is not None:
        assert plan.mode == record.mode


MOVE = ConversationMove("s1", "m9", TERM)


@pytest.mark.parametrize(
    ("outcome", "moved", "mode", "code_before", "session"),
    [
        (applied("code"), None, "code", "safe1", None),
        (applied("code", safety=None), None, "code", "p0", None),
        (applied("both"), MOVE, "both", "safe1", "s1"),
        (NothingToRestore(target_id="t1", mode="conversation"), MOVE, "conversation", None, "s1"),
        (NothingToRestore(target_id="t1", mode="both"), MOVE, "conversation", None, "s1"),
        (NothingToRestore(target_id="t1", mode="code"), None, None, None, None),
        (RestoreConflict(target_id="t1", mode="both"), None, None, None, None),
        (RestorePreview(target_id="t1", mode="code"), None, None, None, None),
    ],
)
def test_record_of_a_finished_restore(
    outcome: RestoreOutcome,
    moved: ConversationMove | None,
    mode: str | None,
    code_before: str | None,
    session: str | None,
) -> None:
    record = record_of("t1", outcome, moved, label="Restore code to “x”")
    if mode is None:
        assert record is None
        return
    assert record is not None
    assert (record.mode, record.code_before, record.session_id, record.undo) == (
        mode,
        code_before,
        session,
        False,
    )
    if moved is not None:
        assert (record.conversation_before, record.terminal_before) == ("m9", TERM)


def test_an_undo_record_keeps_the_label_and_flips_undo_so_undoing_it_is_a_redo() -> None:
    original = rec("conversation", sessionId="s1", label="Restore conversation to “x”")
    undo = record_of(
        "t1", NothingToRestore(target_id="t1", mode="conversation"), MOVE, label="?", undoing=original
    )
    assert undo is not None and undo.undo and undo.label == original.label
    assert undid_words(original) == "Undid: Restore conversation to “x”"
    assert undid_words(undo) == "Redid: Restore conversation to “x”"
    redo = record_of(
        "t1", NothingToRestore(target_id="t1", mode="conversation"), MOVE, label="?", undoing=undo
    )
    assert redo is not None and not redo.undo


def test_a_restore_is_named_by_its_target_cut_for_a_toast() -> None:
    target = cp("t1").model_copy(update={"label": "run_command: " + "x" * 200})
    label = restore_label("both", target)
    assert label.startswith("Restore code and conversation to “run_command: xxx") and label.endswith("…”")
    assert len(label) < 100
    assert restore_label("code", cp("t9")) == "Restore code to “checkpoint t9”"


def stats(ts: float, checkpoint: str | None, kind: str = "applied") -> RestoreStatsEvent:
    return RestoreStatsEvent(ts=ts, duration_ms=1.0, kind=kind, mode="code", checkpoint_id=checkpoint)


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], None),
        ([rec("code", ts=1.0, checkpointId="a"), rec("conversation", ts=2.0)], 1),
        ([rec("conversation", ts=2.0), rec("code", ts=1.0, checkpointId="a")], 0),
        # the statistics of a recorded restore are not another restore
        ([rec("conversation", ts=2.0), stats(3.0, "a"), rec("code", ts=3.5, checkpointId="a")], 2),
        ([rec("conversation", ts=2.0), stats(3.0, "a")], 1),  # a restore no record tells of
        ([rec("conversation", ts=2.0), stats(3.0, "a", kind="failed")], 0),
        ([rec("conversation", ts=2.0), stats(3.0, None)], 0),
        ([rec("code", ts=2.0, checkpointId="x"), rec("conversation", ts=2.0)], 1),  # a tie: the later
    ],
)
def test_newest_is_the_last_restore_of_any_mode(
    events: list[RestoreRecordEvent | RestoreStatsEvent], expected: int | None
) -> None:
    found = newest(events)
    assert found is (events[expected] if expected is not None else None)


@pytest.mark.parametrize(
    ("outcome", "undo", "last", "now", "ask"),
    [
        (applied("code"), False, None, 100.0, True),
        (applied("both"), False, None, 100.0, True),
        (applied("code"), True, None, 100.0, False),  # never after an undo
        (applied("conversation"), False, None, 100.0, False),
        (NothingToRestore(target_id="t1", mode="conversation"), False, None, 100.0, False),
        (RestoreConflict(target_id="t1", mode="code"), False, None, 100.0, False),
        (RestorePreview(target_id="t1", mode="code"), False, None, 100.0, False),
        (applied("code", files=0), False, None, 100.0, False),  # nothing changed
        (applied("code", files=0, skipped=2), False, None, 100.0, False),  # all skipped
        (applied("code", files=0, unchanged=2), False, None, 100.0, False),  # nothing differed
        (applied("code", files=1, skipped=2, unchanged=1), False, None, 100.0, True),
        (applied("code"), False, 100.0, 100.0 + REASON_INTERVAL_S - 1, False),  # asked recently
        (applied("code"), False, 100.0, 100.0 + REASON_INTERVAL_S, True),
    ],
)
def test_the_reason_is_asked_rarely(
    outcome: RestoreOutcome, undo: bool, last: float | None, now: float, ask: bool
) -> None:
    assert ask_reason(outcome, undo=undo, last_asked=last, now=now) is ask


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as e:
        yield e


def test_the_last_restore_is_read_from_the_journals_after_a_reopen(engine: Engine, tmp_path: Path) -> None:
    ws = engine.workspace
    first = engine.head
    (ws / "a.txt").write_text("two\n")
    engine.checkpoint(label="two", changed_paths=["a.txt"])
    assert last_restore(engine) is None
    # A code restore by a front end that writes no record (the command line): its statistics count.
    outcome = restore_code_on_disk(engine, RestoreRequest(checkpoint=first.id))
    assert isinstance(outcome, RestoreApplied) and outcome.checkpoint is not None
    found = last_restore(engine)
    assert found is not None and found.mode == "code" and found.checkpoint_id == outcome.checkpoint.id
    assert found.code_before == outcome.checkpoint.parent and found.label.startswith("Restore code to")
    # A later conversation restore's record (another session's journal) is the last one now.
    later = rec("conversation", sessionId="s9", conversationBefore="m1")
    engine.append_event(later, session_id="s9")
    engine.close()
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as reopened:
        again = last_restore(reopened)
        assert again is not None and again.mode == "conversation" and again.session_id == "s9"


@pytest.mark.parametrize(
    ("heads", "forked_from"),
    [
        ([{"reason": "restore", "checkpointId": "x1"}], "x1"),
        # undone: the next turn continues the original conversation, no fork
        ([{"reason": "restore", "checkpointId": "x1"}, {"reason": "undo"}], None),
        # redone: it forks from the restore's target again
        (
            [
                {"reason": "restore", "checkpointId": "x1"},
                {"reason": "undo"},
                {"reason": "undo", "checkpointId": "x1"},
            ],
            "x1",
        ),
    ],
)
def test_the_timeline_forks_a_turn_only_from_a_restore_that_still_stands(
    heads: list[dict[str, object]], forked_from: str | None
) -> None:
    from retrace.app.timeline.facts import FactsFold

    events = [{"type": "conversationHead", "head": None, **h} for h in heads]
    events.append({"type": "turn", "turnId": "t9", "text": "next"})
    fold = FactsFold("s1").feed(typed(events))
    [turn] = fold.turns
    assert turn.forked_from == forked_from
