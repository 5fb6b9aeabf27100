"""A failed, cancelled or crash-interrupted turn is never silently re-sent.

The fake model is real HTTP, so these tests assert the exact request bodies the SDK sent: after a
turn that got no reply, the next request carries only what the user sent again, and the
conversation stays valid for the API. The withdrawn prompt stays visible in the conversation view
(the chat shows it as a failed turn with a retry action).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent.conftest import Harness, HarnessFactory, unmarked

from retrace.agent.conversation import Conversation, StoredMessage, api_messages
from retrace.engine.store.events import parse_event
from retrace.offline.validation import validate_messages

pytestmark = pytest.mark.slow


def append_wire(engine: Any, event: dict[str, Any], **kw: Any) -> None:
    """Journal an event given in its wire form (the engine appends typed events only)."""
    typed = parse_event(event)
    assert typed is not None, event
    engine.append_event(typed, **kw)


def user_texts(body: dict[str, Any]) -> list[str]:
    """Every text block the user side of a request carries."""
    return [
        b["text"]
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if b.get("type") == "text"
    ]


async def test_a_failed_turn_is_not_resent_and_stays_visible(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [{"status": 500, "times": 2, "text": "never"}, {"text": "hello back"}], max_retries=1
    )
    sid = await h.turn("run the slow migration")
    assert h.stop_reasons() == ["error"]
    view = await h.service.conversation(sid)
    assert view.messages == []
    assert [(w.text, w.reason) for w in view.withdrawn] == [("run the slow migration", "error")]

    await h.turn("just say hello", sid)
    assert h.stop_reasons() == ["error", "end_turn"]
    last = h.fake.requests[-1]
    assert unmarked(last["messages"]) == [
        {"role": "user", "content": [{"type": "text", "text": "just say hello"}]}
    ]
    assert "run the slow migration" not in str(last)
    view = await h.service.conversation(sid)
    assert [m.role for m in view.messages] == ["user", "assistant"]
    assert [w.text for w in view.withdrawn] == ["run the slow migration"]


async def test_a_cancelled_turn_before_any_reply_is_not_resent(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [
            {"text": "thinking very slowly " * 40, "chunkDelayMs": 50},
            {"match": {"lastUserTextContains": "second"}, "text": "ok"},
        ]
    )
    sid, _ = await h.service.prompt("first, stale request")
    for _ in range(200):
        if h.host.of("textDelta"):
            break
        await asyncio.sleep(0.02)
    assert await h.service.cancel(sid)
    assert h.stop_reasons() == ["cancelled"]
    await h.turn("second request", sid)
    assert h.stop_reasons() == ["cancelled", "end_turn"]
    assert user_texts(h.fake.requests[-1]) == ["second request"]
    validate_messages(h.fake.requests[-1]["messages"])
    view = await h.service.conversation(sid)
    assert [(w.text, w.reason) for w in view.withdrawn] == [("first, stale request", "cancelled")]


async def test_a_prompt_interrupted_by_a_crash_is_withdrawn_on_resume(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([{"text": "first answer"}])
    sid = await h.turn("first")
    # A crash after the prompt was journaled, before any reply: what a kill -9 leaves behind.
    conv = Conversation.from_events(sid, list(h.engine.events(sid)))
    turn = {"type": "turn", "turnId": "turn_crashed", "text": "crashed request"}
    append_wire(h.engine, turn, session_id=sid)
    append_wire(
        h.engine,
        {
            "type": "message",
            "id": "msg_crashed",
            "parent": conv.head,
            "role": "user",
            "content": [{"type": "text", "text": "crashed request"}],
            "turnId": "turn_crashed",
            "kind": "prompt",
        },
        session_id=sid,
    )
    again = h.reopen([{"match": {"lastUserTextContains": "after the crash"}, "text": "fine"}])
    await again.service.load()
    view = await again.service.conversation(sid)
    assert [(w.text, w.reason) for w in view.withdrawn] == [("crashed request", "interrupted")]
    await again.turn("after the crash", sid)
    body = again.fake.requests[-1]
    assert user_texts(body) == ["first", "after the crash"]
    assert "crashed request" not in str(body)
    # The withdrawal is journaled: a second restart does not withdraw (or re-send) anything new.
    third = again.reopen([])
    await third.service.load()
    assert [w.text for w in (await third.service.conversation(sid)).withdrawn] == ["crashed request"]


async def test_a_failure_after_tool_calls_sends_the_answered_prompt_once(
    make_harness: HarnessFactory,
) -> None:
    h: Harness = await make_harness(
        [
            {"toolCalls": [{"name": "list_files", "input": {}}]},
            {"status": 500, "times": 2, "text": "never"},
            {"match": {"lastUserTextContains": "next"}, "text": "done"},
        ],
        max_retries=1,
    )
    sid = await h.turn("look around")
    await h.turn("next", sid)
    texts = user_texts(h.fake.requests[-1])
    # The first prompt got a reply (a tool call), so it is history, sent once; nothing is withdrawn.
    assert texts == ["look around", "next"]
    assert (await h.service.conversation(sid)).withdrawn == []
    validate_messages(h.fake.requests[-1]["messages"])


# --------------------------------------------------------------------------- property: any journal


def _chain(kinds: list[str]) -> tuple[list[StoredMessage], Conversation]:
    """A chain of prompts / assistant replies in the given order (as an old or damaged journal may
    hold them), each prompt with a unique text."""
    conv = Conversation("ses_prop")
    chain: list[StoredMessage] = []
    parent: str | None = None
    for i, kind in enumerate(kinds):
        role = "user" if kind == "prompt" else "assistant"
        message = StoredMessage(
            id=f"m{i}",
            parent=parent,
            role=role,  # type: ignore[arg-type]
            content=[{"type": "text", "text": f"{kind} {i}"}],
            turn_id=f"t{i}",
            kind=kind,
            created_at=None,
        )
        conv.messages[message.id] = message
        chain.append(message)
        parent = message.id
    conv.head = parent
    return chain, conv


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["prompt", "assistant"]), min_size=1, max_size=12))
def test_no_unanswered_prompt_ever_reaches_the_model(kinds: list[str]) -> None:
    kinds = ["prompt", *kinds] if kinds[0] != "prompt" else kinds
    if kinds[-1] != "prompt":
        kinds = [*kinds, "prompt"]
    chain, conv = _chain(kinds)
    sent = api_messages(chain, conv)
    validate_messages(sent)
    texts = [b["text"] for m in sent if m["role"] == "user" for b in m["content"] if b.get("type") == "text"]
    # Exactly the prompts that were answered, plus the newest one.
    answered = [f"prompt {i}" for i, k in enumerate(kinds[:-1]) if k == "prompt" and kinds[i + 1] != "prompt"]
    assert texts == [*answered, f"prompt {len(kinds) - 1}"]


async def test_an_unreachable_model_api_names_the_url_and_the_setting(make_harness: HarnessFactory) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    h: Harness = await make_harness([], base_url=url, max_retries=1)
    sid = await h.turn("hello")
    errors = h.host.of("error")
    assert [e.retrying for e in errors] == [True, False]
    assert url in errors[-1].message and "retrace.baseUrl" in errors[-1].message, errors[-1].message
    assert [w.text for w in (await h.service.conversation(sid)).withdrawn] == ["hello"]
