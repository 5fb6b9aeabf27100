"""The restore transaction the engine hands out: the disk restore and the editor-applied
restore both open one (``restoreIntent`` journaled) and close it exactly once, by ``commit``
(the ``restore`` checkpoint, then ``applied``) or ``abandon`` (journals the outcome it ended
with; it writes no file: the disk applier's own rollback undid the files first); one left open is
rolled back by the next open of the store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import RestoreApplied, RestoreFailed, RestorePlan
from retrace.engine.store.events import RestoreDoneEvent, RestoreIntentEvent, event_json

Open = Callable[..., Engine]


def _restore_events(eng: Engine) -> list[dict[str, Any]]:
    return [event_json(e) for e in eng.events(only=(RestoreIntentEvent, RestoreDoneEvent))]


def _apply_like_an_editor(eng: Engine, ws: Path, plan: RestorePlan) -> None:
    for pf in plan.files:
        data = eng.file_content(plan.target_id, pf.path)
        if data is None:
            (ws / pf.path).unlink()
        else:
            write(ws, pf.path, data)


def _two_states(ws: Path, eng: Engine) -> str:
    write(ws, "a.txt", "two\n")
    write(ws, "new.txt", "n\n")
    eng.checkpoint("edit", ["a.txt", "new.txt"])
    return eng.timeline()[0].id


def test_disk_restore_opens_and_commits_one_transaction(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    base = _two_states(ws, eng)
    out = eng.restore(base)
    assert isinstance(out, RestoreApplied)
    intent, done = _restore_events(eng)
    assert intent["type"] == "restoreIntent" and intent["paths"] == ["a.txt", "new.txt"]
    assert done == {**done, "type": "restoreDone", "restoreId": intent["restoreId"], "outcome": "applied"}


def test_editor_path_commits_through_the_transaction(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    base = _two_states(ws, eng)
    plan = eng.plan_restore(base)
    txn = eng.begin_restore(plan)
    assert txn.open
    _apply_like_an_editor(eng, ws, plan)
    out = eng.commit_applied_restore(plan, transaction=txn)
    assert isinstance(out, RestoreApplied) and out.checkpoint is not None
    assert out.checkpoint.restored_from == base and eng.head.id == out.checkpoint.id
    assert txn.outcome == "applied" and not txn.open
    txn.abandon("failed")  # closed: a no-op, nothing journaled
    kinds = [(e["type"], e.get("outcome")) for e in _restore_events(eng)]
    assert kinds == [("restoreIntent", None), ("restoreDone", "applied")]
    with pytest.raises(RetraceError, match="already closed"):
        txn.commit({})


def test_editor_path_that_did_not_apply_closes_failed_and_nothing_is_rolled_back(
    ws: Path, open_engine: Open
) -> None:
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    base = _two_states(ws, eng)
    head = eng.head.id
    plan = eng.plan_restore(base)
    txn = eng.begin_restore(plan)
    out = eng.commit_applied_restore(plan, transaction=txn)  # the editor wrote nothing
    assert isinstance(out, RestoreFailed) and eng.head.id == head
    assert txn.outcome == "failed"
    before = entry_hashes(ws)
    eng.close()
    again = open_engine()
    assert again.recovered == [] and entry_hashes(ws) == before


def test_a_transaction_left_open_is_rolled_back_by_the_next_open(ws: Path, open_engine: Open) -> None:
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    base = _two_states(ws, eng)
    before = entry_hashes(ws)
    plan = eng.plan_restore(base)
    txn = eng.begin_restore(plan)
    _apply_like_an_editor(eng, ws, plan)  # applied, then the process "dies" before commit
    assert txn.open and entry_hashes(ws) != before
    eng.close()
    again = open_engine()
    assert len(again.recovered) == 1 and entry_hashes(ws) == before


def test_abandon_journals_the_outcome_and_touches_no_file(ws: Path, open_engine: Open) -> None:
    """``abandon`` says what it does: it closes the transaction with an outcome and writes no file
    (the name ``rollback`` promised a rollback it never did)."""
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    base = _two_states(ws, eng)
    plan = eng.plan_restore(base)
    txn = eng.begin_restore(plan)
    _apply_like_an_editor(eng, ws, plan)
    written = entry_hashes(ws)
    txn.abandon("conflict")
    assert entry_hashes(ws) == written and txn.outcome == "conflict" and not txn.open
    assert [(e["type"], e.get("outcome")) for e in _restore_events(eng)][-1] == ("restoreDone", "conflict")
    assert not hasattr(txn, "rollback")
