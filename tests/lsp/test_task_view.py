"""What ``retrace/tasks/list`` says of one child: its journaled state, and whether the client may
offer to resume it (the server's rule, so the client never guesses)."""

from __future__ import annotations

import pytest

from retrace.engine.store.events import TaskEvent
from retrace.lsp.handlers.tasks import view


@pytest.mark.parametrize(
    ("status", "resumable"),
    [
        ("running", False),
        ("merged", False),
        ("conflicts", False),
        ("finished", False),
        ("failed", True),
        ("cancelled", True),
        ("interrupted", True),
        ("discarded", False),
    ],
)
def test_a_child_is_offered_for_resuming_only_when_the_server_would_resume_it(
    status: str, resumable: bool
) -> None:
    event = TaskEvent.model_validate(
        {"task_id": "task_1", "call_id": "tc1", "status": status, "description": "notes", "turn_id": "t1"}
    )
    shown = view(event).model_dump(by_alias=True)
    assert shown["status"] == status
    assert shown["resumable"] is resumable
    assert shown["taskId"] == "task_1" and shown["turnId"] == "t1"
