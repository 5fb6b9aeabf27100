"""A conversation restore rewinds the agent's side state with it: ``allowAlways`` answers and
background commands that came after the target are dropped / stopped, earlier ones stay; each
answer and each drop is journaled. A code-only restore tells the model, at the next prompt,
which files it reverted."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.agent.conftest import Harness, HarnessFactory

from retrace.app.restore import RestoreRequest, restore_code_on_disk
from retrace.engine.store.events import PermissionAlwaysEvent, event_json


def tool_checkpoints(h: Harness, session_id: str) -> list[Any]:
    return [c for c in h.engine.timeline(session_id) if c.kind == "tool"]


def call(tool: str, **inputs: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": tool, "input": inputs}]}


async def test_allow_always_answers_after_the_target_are_dropped(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [
            call("write_file", path="a.txt", content="A"),
            {"text": "wrote a"},
            call("run_command", command="touch x"),
            {"text": "touched x"},
            call("write_file", path="b.txt", content="B"),
            call("run_command", command="touch y"),
            {"text": "done"},
        ],
        permissions={"write": "ask", "command": "ask"},
    )
    h.host.decisions = ["allowAlways"]
    sid = await h.turn("write a")
    target = tool_checkpoints(h, sid)[-1]
    h.host.decisions = ["allowAlways"]
    await h.turn("touch x", sid)
    assert [r.tool for r in h.host.asked] == ["write_file", "run_command"]

    restored = await h.service.restore_session(sid, target.id)
    assert restored.revoked == ["run_command"]

    h.host.decisions = ["allow"]
    await h.turn("write b, touch y", sid)
    # write_file's answer came before the target: kept; run_command's after it: asked again.
    assert [r.tool for r in h.host.asked] == ["write_file", "run_command", "run_command"]
    assert (h.workspace / "y").exists()
    events = [e for e in map(event_json, h.engine.events(sid, only=(PermissionAlwaysEvent,)))]
    assert [(e["tool"], e.get("revoked", False)) for e in events] == [
        ("write_file", False),
        ("run_command", False),
        ("run_command", True),
    ]
    assert events[2]["checkpointId"] == target.id


async def test_a_restore_to_the_checkpoint_of_the_answer_keeps_it(make_harness: HarnessFactory) -> None:
    """The answer for a call is given before that call's checkpoint: restoring to it keeps it."""
    h: Harness = await make_harness(
        [
            call("write_file", path="a.txt", content="A"),
            {"text": "ok"},
            call("write_file", path="b.txt", content="B"),
            {"text": "ok"},
        ],
        permissions={"write": "ask"},
    )
    h.host.decisions = ["allowAlways"]
    sid = await h.turn("write a")
    restored = await h.service.restore_session(sid, tool_checkpoints(h, sid)[-1].id)
    assert restored.revoked == []
    await h.turn("write b", sid)
    assert len(h.host.asked) == 1


async def test_background_commands_after_the_target_stop_earlier_ones_run(
    make_harness: HarnessFactory,
) -> None:
    h: Harness = await make_harness(
        [
            call("run_command", command="sleep 300", background=True),
            {"text": "first started"},
            call("run_command", command="sleep 301", background=True),
            {"text": "second started"},
        ]
    )
    try:
        sid = await h.turn("start one")
        target = tool_checkpoints(h, sid)[-1]
        await h.turn("start another", sid)
        assert [t.command for t in h.service.background.running(sid)] == ["sleep 300", "sleep 301"]

        restored = await h.service.restore_session(sid, target.id)

        assert [t.command for t in restored.stopped] == ["sleep 301"]
        assert restored.stopped[0].state == "stopped"
        assert [t.command for t in h.service.background.running(sid)] == ["sleep 300"]
    finally:
        await h.service.background.stop_all()


async def test_a_code_only_restore_is_told_to_the_model_at_the_next_prompt(
    make_harness: HarnessFactory,
) -> None:
    h: Harness = await make_harness(
        [
            call("write_file", path="a.txt", content="A"),
            {"text": "wrote a"},
            call("write_file", path="src/util.py", content="changed\n"),
            {"text": "changed util"},
            {"text": "noted"},
            {"text": "again"},
        ]
    )
    sid = await h.turn("write a")
    target = tool_checkpoints(h, sid)[-1]
    await h.turn("change util", sid)
    outcome = await asyncio.to_thread(
        restore_code_on_disk, h.engine, RestoreRequest(checkpoint=target.id, mode="code")
    )
    assert outcome.kind == "applied"
    await h.service.note_code_restore(sid, outcome)
    await h.turn("what now?", sid)
    sent = h.fake.requests[-1]["messages"][-1]["content"]
    texts = [b["text"] for b in sent if b.get("type") == "text"]
    assert texts[-1] == "what now?"
    note = next(t for t in texts if t.startswith("[Retrace note: the workspace files were restored"))
    assert "src/util.py" in note and target.id in note
    # Told once: the prompt after that carries no note.
    await h.turn("and now?", sid)
    later = h.fake.requests[-1]["messages"][-1]["content"]
    assert not any("restored" in b.get("text", "") for b in later if b.get("type") == "text")


async def test_a_code_restore_then_its_undo_tells_nothing(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [
            call("write_file", path="a.txt", content="A"),
            {"text": "wrote a"},
            call("write_file", path="a.txt", content="AA"),
            {"text": "rewrote a"},
            {"text": "ok"},
        ]
    )
    sid = await h.turn("write a")
    target = tool_checkpoints(h, sid)[-1]
    await h.turn("rewrite a", sid)
    before = h.engine.head.id
    for checkpoint in (target.id, before):  # the restore, then its undo
        outcome = await asyncio.to_thread(
            restore_code_on_disk, h.engine, RestoreRequest(checkpoint=checkpoint, mode="code")
        )
        assert outcome.kind == "applied"
        await h.service.note_code_restore(sid, outcome)
    assert (h.workspace / "a.txt").read_text() == "AA"
    await h.turn("what now?", sid)
    sent = h.fake.requests[-1]["messages"][-1]["content"]
    assert [b["text"] for b in sent if b.get("type") == "text"] == ["what now?"]
