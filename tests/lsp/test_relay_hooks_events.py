"""What the editor is told for each step of a hook event (pure: ``relay_hooks.agent_events``)."""

from __future__ import annotations

from datetime import UTC, datetime

from retrace.agent.notifications import CheckpointCreated, TurnFinished, TurnStarted
from retrace.app.hooks.service import HookOutcome, Recorded, TurnBegan, TurnClosed
from retrace.engine.models import Checkpoint
from retrace.lsp.services.relay_hooks import agent_events, answer


def _cp(cid: str) -> Checkpoint:
    return Checkpoint(
        id=cid, parent=None, session_id="claude-code-s", kind="tool", created_at=datetime.now(UTC)
    )


def test_each_step_becomes_the_event_retrace_sends_for_its_own_sessions() -> None:
    outcome = HookOutcome(
        "claude-code-s",
        steps=[
            TurnClosed("t0", "interrupted"),
            TurnBegan("t1", "prompt"),
            Recorded(_cp("c1"), "t1"),
            TurnClosed("t1", "stop"),
            TurnBegan("t2", ""),
            TurnClosed("t2", "error"),
            TurnClosed("t3", "logout"),
        ],
        notes=["n"],
        agent="claude-code",
    )
    told = agent_events(outcome)
    assert [type(e) for e in told] == [
        TurnFinished, TurnStarted, CheckpointCreated, TurnFinished, TurnStarted, TurnFinished, TurnFinished,
    ]  # fmt: skip
    assert all(e.session_id == "claude-code-s" for e in told)
    finished = [e for e in told if isinstance(e, TurnFinished)]
    assert [e.stop_reason for e in finished] == ["cancelled", "end_turn", "error", "end_turn"]
    # Named as another agent's turns: clients keep them out of Retrace's chat and activity.
    assert {e.agent for e in told if isinstance(e, TurnStarted | TurnFinished)} == {"claude-code"}
    assert told[1].model_dump(by_alias=True)["agent"] == "claude-code"
    created = told[2]
    assert isinstance(created, CheckpointCreated) and (created.turn_id, created.checkpoint.id) == ("t1", "c1")
    assert answer(outcome) == {"sessionId": "claude-code-s", "checkpoints": ["c1"], "notes": ["n"]}
    assert agent_events(HookOutcome(None)) == []
