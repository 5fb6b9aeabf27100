"""Finishing what a crash left open in one conversation (a session's, or a subagent's own).

A ``toolCallIntent`` without a ``toolCallResult`` is answered ``interrupted`` (journaled; the call
is never run again), the workspace is re-captured (``record_external``) so what the call did
before the crash is recorded, an unanswered tool batch is closed and an unanswered prompt is
withdrawn, so the conversation is valid for the model again.
"""

from __future__ import annotations

from retrace.agent.conversation import INTERRUPTED, NOT_RUN_STOPPED, Conversation, now_iso, prompt_text
from retrace.agent.runtime import Runtime, close_open_batch, journal
from retrace.agent.tool_call import emit_checkpoint, tool_result_event
from retrace.engine.store.events import PromptWithdrawnEvent


async def finish_interrupted(rt: Runtime, conv: Conversation) -> bool:
    """Close what a crash left open in ``conv``; whether it had interrupted tool calls."""
    sid = conv.session_id
    pending = conv.pending_intents()
    for record in pending:
        ended = tool_result_event(
            call_id=record.id,
            tool=record.tool,
            turn_id=record.turn_id,
            status="interrupted",
            output=INTERRUPTED,
        )
        await journal(rt, conv, ended)
    if pending:
        cp = await rt.gate.call(
            rt.engine.record_external,
            session_id=sid,
            conversation=conv.head,
            terminal=conv.terminal_session().state.record(),
        )
        if cp is not None:
            await emit_checkpoint(rt, sid, None, cp)
    await close_open_batch(rt, conv, None, NOT_RUN_STOPPED)
    await withdraw_unanswered(rt, conv, "interrupted")
    return bool(pending)


async def withdraw_unanswered(
    rt: Runtime, conv: Conversation, reason: str, *, turn_id: str | None = None, text: str | None = None
) -> bool:
    """If the head is a prompt that got no reply (of ``turn_id``, when given), journal its
    withdrawal: the head moves back to its parent, so the next request carries only what the user
    sends then. Returns whether a prompt was withdrawn."""
    prompt = conv.unanswered_prompt()
    if prompt is None or (turn_id is not None and prompt.turn_id != turn_id):
        return False
    event = PromptWithdrawnEvent(
        message_id=prompt.id,
        turn_id=prompt.turn_id,
        reason=reason,
        text=text if text is not None else prompt_text(prompt),
        created_at=now_iso(),
    )
    await journal(rt, conv, event)
    return True
