"""Conversation restore, summaries, crash resume and the replay buffer, against the real
engine and the fake Messages API (which rejects any invalid history with a 400)."""

from __future__ import annotations

from typing import Any

import pytest

from retrace.agent.conversation import INTERRUPTED, NOT_RUN_RESTORED
from retrace.app.timeline import build_stories, facts_from_events
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import MessageEvent, ToolCallResultEvent, parse_event

from .conftest import Harness, HarnessFactory
from .test_agent_loop import e2e_responses, tool_checkpoints

pytestmark = pytest.mark.slow


def append_wire(engine: Any, event: dict[str, Any], **kw: Any) -> None:
    """Journal an event given in its wire form (the engine appends typed events only)."""
    typed = parse_event(event)
    assert typed is not None, event
    engine.append_event(typed, **kw)


def texts(message: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def results(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b.get("type") == "tool_result"]


async def test_restore_mid_batch_gives_a_valid_history_and_a_file_note(make_harness: HarnessFactory) -> None:
    after = {"match": {"lastUserTextContains": "after restore"}, "text": "noted"}
    h: Harness = await make_harness([*e2e_responses()[:3], after])
    sid = await h.turn("prompt one")
    write_cp, edit_cp, run_cp = tool_checkpoints(h, sid)
    usage_before = (await h.service.conversation(sid)).usage

    # edit_file is the first call of a batch of two: run_command comes after the cursor.
    view = await h.service.restore_conversation(sid, edit_cp.id)
    assert view.head is not None
    last = view.messages[-1]
    assert last.kind == "restoreResults"
    edit_result, run_result = last.content
    assert edit_result["content"].startswith("Edited src/app.py")
    assert run_result["content"] == NOT_RUN_RESTORED
    assert view.usage == usage_before  # token and cost totals survive a restore
    assert [e.head for e in h.host.of("conversationChanged")] == [view.head]

    # The code was not restored: the next prompt says which files changed since the checkpoint.
    await h.turn("after restore", sid)
    assert h.fake.statuses[-1] == 200
    sent = h.fake.requests[-1]["messages"]
    assert [r["content"] for r in results(sent[-1])][1] == NOT_RUN_RESTORED
    note = texts(sent[-1])
    assert f"restored to checkpoint {edit_cp.id}" in note
    assert "added generated/out.txt" in note
    assert note.rstrip().endswith("after restore")
    assert "noted" in "".join(e.text for e in h.host.of("textDelta"))
    # Non-destructive: the abandoned branch is still in the journal.
    events = list(h.engine.events(sid))
    assert sum(1 for e in events if isinstance(e, MessageEvent) and e.kind == "toolResults") == 2

    # Restoring to the end of the first call (a single-call batch) and to the baseline.
    view = await h.service.restore_conversation(sid, write_cp.id)
    assert view.messages[-1].content[0]["content"].startswith("Created hello.txt")
    baseline = h.engine.timeline()[0]
    view = await h.service.restore_conversation(sid, baseline.id)
    assert view.head is None
    assert view.messages == []
    await h.turn("from scratch", sid)
    assert h.fake.statuses[-1] == 200
    assert h.fake.requests[-1]["messages"][0]["role"] == "user"
    del run_cp


async def test_restore_both_has_no_file_note(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([*e2e_responses()])
    sid = await h.turn("prompt one")
    write_cp = tool_checkpoints(h, sid)[0]
    outcome = h.engine.restore(write_cp.id, mode="both")
    assert outcome.kind == "applied"
    await h.service.restore_conversation(sid, write_cp.id)
    await h.turn("continue", sid)
    assert "Retrace note" not in texts(h.fake.requests[-1]["messages"][-1])


async def test_restore_across_sessions_and_refusals(make_harness: HarnessFactory) -> None:
    slow = {"name": "run_command", "input": {"command": "sleep 20"}}
    h: Harness = await make_harness([*e2e_responses()[:4], {"text": "ok"}, {"toolCalls": [slow]}])
    sid = await h.turn("prompt one")
    cp = tool_checkpoints(h, sid)[0]
    other = await h.turn("another session")
    assert (await h.service.conversation(other)).messages
    # Session `other` did not exist at `cp`: its conversation at that point is empty.
    view = await h.service.restore_conversation(other, cp.id)
    assert view.messages == []
    with pytest.raises(RetraceError, match="unknown checkpoint"):
        await h.service.restore_conversation(sid, "nope-not-an-id")
    running, _ = await h.service.prompt("run something slow", sid)
    with pytest.raises(RetraceError, match="running a turn; cancel it first"):
        await h.service.restore_conversation(sid, cp.id)
    with pytest.raises(RetraceError, match="running a turn"):
        await h.service.prompt("again", sid)
    await h.service.cancel(running)


async def test_summarize_up_to_and_from(make_harness: HarnessFactory) -> None:
    summary_reply = {"text": "SUMMARY: created hello.txt; src/app.py annotated; open task: none."}
    h: Harness = await make_harness([*e2e_responses()[:3], summary_reply, summary_reply])
    sid = await h.turn("prompt one")
    write_cp, edit_cp, run_cp = tool_checkpoints(h, sid)
    before = await h.service.conversation(sid)

    cp = await h.service.summarize(edit_cp.id, "upTo")
    assert cp.kind == "summary"
    assert cp.files == []
    assert cp.meta == {"summaryOf": edit_cp.id, "direction": "upTo"}
    summary_request = h.fake.requests[-1]
    assert "tools" not in summary_request
    assert "hello.txt" in summary_request["messages"][0]["content"]
    after = await h.service.conversation(sid)
    assert after.head == cp.conversation
    assert after.messages[0].kind == "summary"
    assert "SUMMARY: created hello.txt" in after.messages[0].content[0]["text"]
    # Up to the edit (including its batch's results), then the final assistant message stays.
    assert [m.role for m in after.messages] == ["user", "assistant"]
    assert after.messages[1].content == before.messages[-1].content
    assert after.usage.input_tokens > before.usage.input_tokens  # the summary call is counted

    # From the first tool call: keep prompt → write → its result, summarize the rest.
    await h.service.restore_conversation(sid, run_cp.id)
    cp2 = await h.service.summarize(write_cp.id, "from")
    view = await h.service.conversation(sid)
    assert view.head == cp2.conversation
    assert [m.role for m in view.messages] == ["user", "assistant", "user"]
    assert view.messages[2].content[0]["type"] == "tool_result"
    assert "SUMMARY" in view.messages[2].content[-1]["text"]
    # Both chains are valid histories for the API: the next turn goes through.
    await h.turn("continue", sid)
    assert h.fake.statuses[-1] == 200
    with pytest.raises(RetraceError, match="no conversation"):
        await h.service.summarize(h.engine.timeline()[0].id, "from")


async def test_crash_resume_marks_interrupted_and_never_reruns(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([*e2e_responses()])
    sid = await h.turn("prompt one")
    # Simulate a crash in the middle of a tool call: the model asked for a command, its intent
    # was journaled, the command ran partly (a file appeared), then the process died.
    head = (await h.service.conversation(sid)).head
    prompt = [{"type": "text", "text": "make crash.txt"}]
    append_wire(h.engine,
        {"type": "message", "id": "msg_crash", "parent": head,
         "role": "user", "content": prompt, "turnId": "t9", "kind": "prompt"},
        session_id=sid,
    )  # fmt: skip
    use = {
        "type": "tool_use",
        "id": "toolu_crash",
        "name": "run_command",
        "input": {"command": "touch crash.txt rerun.txt"},
    }
    append_wire(h.engine,
        {"type": "message", "id": "msg_crash_a", "parent": "msg_crash", "role": "assistant",
         "content": [use], "turnId": "t9", "kind": "assistant"},
        session_id=sid,
    )  # fmt: skip
    append_wire(
        h.engine,
        {
            "type": "toolCallIntent",
            "id": "toolu_crash",
            "tool": "run_command",
            "input": use["input"],
            "turnId": "t9",
        },
        session_id=sid,
    )
    (h.workspace / "crash.txt").write_text("half done")

    h2 = h.reopen([{"match": {"lastToolResultContains": "interrupted"}, "text": "I see it was interrupted."}])
    interrupted = await h2.service.load()
    assert interrupted == [sid]
    assert not (h2.workspace / "rerun.txt").exists()  # never executed again
    results_ = [
        e for e in h2.engine.events(sid) if isinstance(e, ToolCallResultEvent) and e.id == "toolu_crash"
    ]
    assert [r.status for r in results_] == ["interrupted"]
    external = [c for c in h2.engine.timeline() if c.kind == "external"]
    assert any(f.path == "crash.txt" for c in external for f in c.files)  # re-captured
    assert [s.tool for s in h2.service.search_tool_calls(tool="run_command")][:1] == ["run_command"]
    assert h2.service.search_tool_calls(input_contains="rerun.txt")[0].status == "interrupted"

    await h2.turn("what happened?", sid)
    assert h2.fake.statuses == [200]
    sent = h2.fake.requests[0]["messages"]
    assert results(sent[-1])[0]["content"] == INTERRUPTED
    assert texts(sent[-1]) == "what happened?"
    assert not (h2.workspace / "rerun.txt").exists()
    # A second restart finds nothing left to resume.
    h3 = h2.reopen()
    assert await h3.service.load() == []


async def test_replay_buffer_search(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([*e2e_responses()])
    sid = await h.turn("prompt one")
    await h.turn("prompt two", sid)
    calls = h.service.search_tool_calls()
    assert [c.tool for c in calls] == ["edit_file", "run_command", "edit_file", "write_file"]  # newest first
    assert all(c.checkpoint_id for c in calls)
    assert all(c.status == "ok" and c.duration_ms >= 0 for c in calls)
    edits = h.service.search_tool_calls(tool="edit_file")
    assert [c.input["path"] for c in edits] == ["hello.txt", "src/app.py"]
    assert [c.tool for c in h.service.search_tool_calls(input_contains="GENERATED/OUT")] == ["run_command"]
    assert h.service.search_tool_calls(tool="write_file", input_contains="nothing-like-this") == []
    # Rebuilt from the journal after a restart, checkpoint ids included.
    h2 = h.reopen()
    await h2.service.load()
    again = h2.service.search_tool_calls()
    assert [(c.id, c.checkpoint_id, c.output) for c in again] == [
        (c.id, c.checkpoint_id, c.output) for c in calls
    ]


async def test_sessions_and_settings(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([*e2e_responses()])
    sid = await h.turn("the first prompt of this session")
    view = await h.service.conversation(sid)
    assert len(view.messages) == 6 and not view.running
    assert not h.service.running(sid)
    # Session titles come from the timeline's one SessionInfo (built from the journal).
    [story] = build_stories(h.engine.timeline(sid), None, {sid: facts_from_events(sid, h.engine.events(sid))})
    assert story.session.id == sid and story.session.title == "the first prompt of this session"
    updated = h.service.update_settings(model="claude-other", permissions={"write": "deny", "command": "ask"})
    assert updated.model == "claude-other"
    assert h.service.policy.setting_for("edit_file") == "deny"
    with pytest.raises(ValueError):
        h.service.update_settings(max_tokens=0)
    with pytest.raises(RetraceError, match="empty"):
        await h.service.prompt("   ")
    with pytest.raises(RetraceError, match="unknown session"):
        await h.service.conversation("no-such-session")


async def test_a_damaged_journal_event_is_skipped_not_fatal(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([*e2e_responses()[:3], {"text": "still here"}])
    sid = await h.turn("prompt one")
    # The store refuses to write such events; damage on disk can still produce them.
    with pytest.raises(RetraceError, match="event models"):
        h.engine.append_event({"type": "message", "role": "user"}, session_id=sid)  # type: ignore[arg-type]
    with (h.store / "sessions" / sid / "journal.jsonl").open("a") as journal:
        journal.write('{"type":"message","role":"user"}\n{"type":"usage","inputTokens":"many"}\n')
    h2 = h.reopen()
    await h2.service.load()
    view = await h2.service.conversation(sid)
    assert len(view.messages) == 6
    await h2.turn("go on", sid)
    assert h2.fake.statuses[-1] == 200
