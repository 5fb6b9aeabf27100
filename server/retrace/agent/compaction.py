"""Summaries of a conversation's older part: what the summarizer reads, and automatic compaction.

The summary mode ("summarize up to here", :meth:`AgentService.summarize`) and automatic
compaction share the summarizer's system prompt and transcript (:data:`SUMMARY_SYSTEM`,
:func:`summary_messages`); the model call itself is :func:`retrace.agent.loop.write_summary`.

Automatic compaction, before each model call of a turn (:func:`plan_compaction`, then
:func:`compact`):

* **Measure.** The next request's size is the input the API counted for the latest request
  (uncached + cache reads + cache writes, :attr:`Conversation.measured`) plus an estimate of the
  messages appended since; when that request is not on the current branch (a restart, a
  restore, a summary), the whole request is estimated (~4 characters a token).
* **Decide.** Past ``compact_at`` × the model's context window (``auto_compact`` off: never),
  the chain is cut at the start of an exchange (an assistant message right after a user
  message), so a ``tool_use`` and its ``tool_result`` always stay together: the last
  ``compact_keep`` exchanges are kept verbatim (fewer when they alone are over half the
  threshold), everything before is summarized. No cut leaves the summary empty of model work.
* **Rewrite.** A ``conversationHead`` event (reason ``compaction``) moves the head to the root;
  the summary (a ``summary`` message, the user's current request quoted when it was summarized)
  and copies of the kept messages (same role, content, kind and turn) are appended; a
  ``summary`` checkpoint records the new head. Nothing is deleted: a restore to any earlier
  checkpoint brings the original messages back, and the conversation view keeps showing them
  before the summary (:meth:`Conversation.shown_chain`). The user is told (``contextCompacted``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from retrace.agent.conversation import (
    Conversation,
    StoredMessage,
    api_messages,
    new_id,
    now_iso,
    prompt_text,
)
from retrace.agent.notifications import ContextCompacted
from retrace.agent.runtime import Runtime
from retrace.agent.settings import AgentSettings
from retrace.agent.tool_call import emit_checkpoint
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import ConversationHeadEvent, MessageEvent

SUMMARY_SYSTEM = (
    "You compress coding-agent conversations. Write a concise summary that keeps every decision "
    "made, every constraint or preference the user stated, the open tasks, and the names of the "
    "files involved (with what was done to them). Plain prose and bullet points; no preamble."
)
CHARS_PER_TOKEN = 4
"""The estimate's ratio (a little generous for code, which tokenizes denser than prose)."""
TOOL_RESULT_CHARS = 1500
"""A tool output is shortened to this in the summarizer's transcript."""


# --------------------------------------------------------------------------- the transcript


def render_transcript(messages: list[dict[str, Any]]) -> str:
    """Plain text of API messages for the summarizer (tool outputs shortened)."""
    lines: list[str] = []
    for message in messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                lines.append(f"{message['role'].upper()}: {block['text']}")
            elif kind == "tool_use":
                lines.append(f"TOOL CALL {block['name']}: {block['input']}")
            elif kind == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else str(content)
                if len(text) > TOOL_RESULT_CHARS:
                    text = text[:TOOL_RESULT_CHARS] + " [...]"
                lines.append(f"TOOL RESULT{' (error)' if block.get('is_error') else ''}: {text}")
    return "\n".join(lines)


def summary_messages(messages: list[dict[str, Any]], max_chars: int) -> list[dict[str, Any]]:
    """The summarizer's request messages for API ``messages``; a transcript over ``max_chars``
    loses its middle (marked): the start holds any earlier summary, the end the latest work."""
    transcript = render_transcript(messages)
    if len(transcript) > max_chars:
        head = max_chars // 4
        tail = max_chars - head
        left = len(transcript) - head - tail
        transcript = f"{transcript[:head]}\n[... {left:,} characters left out ...]\n{transcript[-tail:]}"
    return [
        {
            "role": "user",
            "content": "Summarize this part of our conversation so we can continue from the "
            f"summary alone:\n\n{transcript}",
        }
    ]


# --------------------------------------------------------------------------- measuring


def estimate_tokens(value: object) -> int:
    """A rough token count of JSON-able ``value`` (characters / :data:`CHARS_PER_TOKEN`)."""
    return len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN + 1


def request_size(conv: Conversation, fixed_tokens: Callable[[], int]) -> int:
    """The input tokens the next request of ``conv`` will take (see the module docstring);
    ``fixed_tokens`` estimates the system prompt and tools (asked only when nothing measured
    applies)."""
    chain = conv.chain()
    if conv.measured is not None:
        sent_head, tokens = conv.measured
        ids = [m.id for m in chain]
        if sent_head in ids:
            after = chain[ids.index(sent_head) + 1 :]
            return tokens + (estimate_tokens([m.content for m in after]) if after else 0)
    return fixed_tokens() + estimate_tokens([m.content for m in chain])


def cut_point(chain: list[StoredMessage], *, keep: int, tail_budget: int) -> int | None:
    """Index of the first message kept verbatim, or ``None`` when no cut summarizes anything."""
    starts = [i for i in range(1, len(chain)) if chain[i].role == "assistant" and chain[i - 1].role == "user"]
    first_assistant = next((i for i, m in enumerate(chain) if m.role == "assistant"), len(chain))
    options = [i for i in starts[max(0, len(starts) - keep) :] if i > first_assistant]
    for index in options:
        if estimate_tokens([m.content for m in chain[index:]]) <= tail_budget:
            return index
    return options[-1] if options else None


@dataclass(frozen=True)
class CompactionPlan:
    size: int
    """The next request's size in tokens (measured and estimated)."""
    window: int
    summarized: list[StoredMessage]
    kept: list[StoredMessage]


def plan_compaction(
    conv: Conversation, settings: AgentSettings, fixed_tokens: Callable[[], int]
) -> CompactionPlan | None:
    """What to compact before the next request (``None``: nothing, or nothing can be)."""
    if not settings.auto_compact:
        return None
    window = settings.window()
    threshold = int(window * settings.compact_at)
    size = request_size(conv, fixed_tokens)
    if size < threshold:
        return None
    chain = conv.chain()
    cut = cut_point(chain, keep=settings.compact_keep, tail_budget=threshold // 2)
    if cut is None:
        return None
    return CompactionPlan(size, window, chain[:cut], chain[cut:])


def summarized_api_messages(conv: Conversation, plan: CompactionPlan) -> list[dict[str, Any]]:
    """The summarized part as the API saw it (what the summarizer reads)."""
    return api_messages(plan.summarized, conv)


# --------------------------------------------------------------------------- rewriting


def _note(plan: CompactionPlan, summary: str, turn_id: str | None) -> str:
    note = (
        f"[Summary of the earlier conversation: it neared the context window (~{plan.size:,} of "
        f"{plan.window:,} tokens), so its older part was summarized]\n{summary}"
    )
    prompt = next((m for m in reversed(plan.summarized) if m.kind == "prompt" and m.turn_id == turn_id), None)
    if prompt is not None and turn_id is not None:
        note += f"\n\n[The user's current request, verbatim:]\n{prompt_text(prompt)}"
    return note


def _rewrite_events(
    plan: CompactionPlan, note: str, turn_id: str | None
) -> tuple[list[ConversationHeadEvent | MessageEvent], str]:
    """The journal events of the rewrite, and the new head."""
    events: list[ConversationHeadEvent | MessageEvent] = [
        ConversationHeadEvent(head=None, reason="compaction", summarized=plan.summarized[-1].id)
    ]
    parent: str | None = None
    no_attachments: list[str] = []
    summary = (("user", [{"type": "text", "text": note}], turn_id, "summary", no_attachments),)
    copies = tuple((m.role, m.content, m.turn_id, m.kind, m.attachments) for m in plan.kept)
    for role, content, message_turn, kind, attachments in summary + copies:
        message_id = new_id("msg")
        events.append(
            MessageEvent(
                id=message_id,
                parent=parent,
                role=role,
                content=content,
                turn_id=message_turn,
                kind=kind,
                created_at=now_iso(),
                attachments=attachments or None,
            )
        )
        parent = message_id
    assert parent is not None
    return events, parent


async def compact(
    rt: Runtime, conv: Conversation, turn_id: str | None, plan: CompactionPlan, summary: str
) -> Checkpoint:
    """Replace the model's view of ``plan.summarized`` by ``summary`` (journaled, checkpointed,
    announced); the original messages stay in the journal. The rewrite and its checkpoint are
    one engine call: a cancel cannot leave the conversation half rewritten."""
    sid = conv.session_id
    events, head = _rewrite_events(plan, _note(plan, summary, turn_id), turn_id)
    editor_state = rt.host.editor_state()
    terminal = conv.terminal_session().state.record()

    def write() -> Checkpoint:
        for event in events:
            rt.engine.append_event(event, session_id=sid)
            conv.apply_written(event)
        return rt.engine.checkpoint(
            f"automatic compaction: {len(plan.summarized)} earlier messages summarized",
            [],
            kind="summary",
            session_id=sid,
            turn_id=turn_id,
            editor_state=editor_state,
            conversation=head,
            terminal=terminal,
            meta={"auto": True, "direction": "upTo", "tokensBefore": plan.size, "contextWindow": plan.window},
        )

    cp = await rt.gate.call(write)
    await emit_checkpoint(rt, sid, turn_id, cp)
    await rt.host.emit(
        ContextCompacted(
            session_id=sid,
            turn_id=turn_id,
            checkpoint_id=cp.id,
            summarized_messages=len(plan.summarized),
            kept_messages=len(plan.kept),
            tokens_before=plan.size,
            context_window=plan.window,
        )
    )
    return cp
