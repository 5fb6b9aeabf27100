"""A checkpoint that cannot be recorded is on record (``checkpointFailed``) and counted: the
metrics' attempts, failures and success ratio after an agent turn whose checkpoint failed."""

from __future__ import annotations

from typing import Any

import pytest
from tests.agent.conftest import Harness, HarnessFactory

from retrace.app.metrics.collect import collect, snapshot
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import CheckpointFailedEvent

EDIT = {"path": "notes.txt", "old_string": "remember the milk", "new_string": "remember the bread"}
RESPONSES: list[dict[str, Any]] = [
    {"toolCalls": [{"name": "edit_file", "input": EDIT}]},
    {"text": "done"},
]


async def test_a_failed_checkpoint_is_counted(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    h: Harness = await make_harness(RESPONSES)

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise RetraceError("the store refused (test)")

    monkeypatch.setattr(h.engine, "checkpoint", refuse)
    sid = await h.turn("edit the notes")
    failed = [e for e in h.engine.events(sid) if isinstance(e, CheckpointFailedEvent)]
    assert [(e.kind, e.error) for e in failed] == [("tool", "the store refused (test)")]
    snap = snapshot(collect(h.store, h.workspace, 10**9), text=True)
    counts = snap.checkpoints
    assert counts.failures == 1
    assert counts.attempts == counts.successes + 1
    assert counts.success_ratio == pytest.approx(counts.successes / counts.attempts)
    assert f'retrace_checkpoint_failures_total{{kind="tool",session="{sid}"}} 1.0' in snap.text
