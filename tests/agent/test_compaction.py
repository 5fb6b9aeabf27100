"""Automatic compaction, against the real engine and the fake Messages API (which answers 400 to
any invalid history): the threshold, what the next request carries, the journal, restores."""

from __future__ import annotations

from typing import Any

import pytest

from retrace.agent.compaction import SUMMARY_SYSTEM, cut_point, request_size
from retrace.agent.conversation import Conversation, Role, StoredMessage
from retrace.engine.store.events import ConversationHeadEvent, MessageEvent

from .conftest import Harness, HarnessFactory

BIG = 170_000  # over 80 % of the default 200k window
SUMMARY = "SUMMARY: wrote a.txt and b.txt; the user wants c.txt next."


def write(path: str, tokens: int = 1000) -> dict[str, Any]:
    return {
        "toolCalls": [{"name": "write_file", "input": {"path": path, "content": f"{path}\n"}}],
        "usage": {"inputTokens": tokens},
    }


def script() -> list[dict[str, Any]]:
    return [
        write("a.txt"),
        write("b.txt"),
        {"text": "turn one done", "usage": {"inputTokens": 1200}},
        write("c.txt", BIG),  # turn two: this request crosses the threshold
        {"text": SUMMARY},  # the summary request
        {"text": "all done", "usage": {"inputTokens": 3000}},
    ]


def tool_ids(request: dict[str, Any]) -> list[str]:
    return [b["id"] for m in request["messages"] for b in m["content"] if b.get("type") == "tool_use"]


async def test_compaction_at_the_threshold_keeps_the_tail_and_the_journal(
    make_harness: HarnessFactory,
) -> None:
    h: Harness = await make_harness(script())
    sid = await h.turn("start: write a.txt then b.txt")
    assert len(h.fake.requests) == 3
    await h.turn("second: now c.txt", sid)
    assert h.stop_reasons() == ["end_turn", "end_turn"]
    assert h.fake.statuses == [200] * 6  # every history sent was valid

    summary_request, after = h.fake.requests[4], h.fake.requests[5]
    assert summary_request["system"] == SUMMARY_SYSTEM
    assert "tools" not in summary_request
    transcript = summary_request["messages"][0]["content"]
    assert "start: write a.txt" in transcript and "a.txt" in transcript

    # The next request carries the summary instead of the older messages, the tail verbatim.
    first = after["messages"][0]
    assert first["role"] == "user" and SUMMARY in first["content"][0]["text"]
    before_ids = tool_ids(h.fake.requests[3])
    after_ids = tool_ids(after)
    assert before_ids[0] not in after_ids  # a.txt's call: summarized
    assert len(after_ids) == 2 and after_ids[0] == before_ids[1]  # b.txt's and c.txt's calls kept
    assert "start: write a.txt" not in str(after["messages"][1:])
    assert "second: now c.txt" in str(after["messages"])  # the current prompt stays verbatim

    # Recorded as a summary checkpoint of this turn; the user is told.
    summary_cp = next(c for c in h.engine.timeline(sid) if c.kind == "summary")
    assert summary_cp.meta["auto"] is True
    told = h.host.of("contextCompacted")
    assert [e.checkpoint_id for e in told] == [summary_cp.id]
    assert told[0].tokens_before >= BIG and told[0].context_window == 200_000
    assert told[0].summarized_messages == 3

    # The journal still holds every original message.
    view = await h.service.conversation(sid)
    assert summary_cp.conversation in [m.id for m in view.messages]  # the turn went on from it
    # The chat still shows the originals, then the summary, then the rest: each call once.
    assert [m.kind for m in view.messages][:4] == ["prompt", "assistant", "toolResults", "summary"]
    assert "start: write a.txt" in str(view.messages[0].content)
    shown_ids = [b["id"] for m in view.messages for b in m.content if b.get("type") == "tool_use"]
    assert shown_ids == [*before_ids, after_ids[-1]]
    assert set(view.tool_statuses) == set(shown_ids)
    events = list(h.engine.events(sid))
    originals = [e for e in events if isinstance(e, MessageEvent) and e.kind != "summary"]
    assert any("start: write a.txt" in str(e.content) for e in originals)
    assert sum(1 for e in events if isinstance(e, ConversationHeadEvent) and e.reason == "compaction") == 1

    # A restore to before the compaction brings the full conversation back.
    a_cp = next(c for c in h.engine.timeline(sid) if c.kind == "tool" and c.tool == "write_file")
    restored = await h.service.restore_conversation(sid, a_cp.id)
    assert "start: write a.txt" in str(restored.messages[0].content)
    assert [m.kind for m in restored.messages] == ["prompt", "assistant", "restoreResults"]
    await h.turn("third", sid)
    assert h.fake.statuses[-1] == 200
    assert tool_ids(h.fake.requests[-1]) == before_ids[:1]


async def test_compaction_can_be_turned_off(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(script(), auto_compact=False)
    sid = await h.turn("start: write a.txt then b.txt")
    await h.turn("second: now c.txt", sid)
    assert all(r.get("system") != SUMMARY_SYSTEM for r in h.fake.requests)
    assert not h.host.of("contextCompacted")
    assert not [c for c in h.engine.timeline(sid) if c.kind == "summary"]


async def test_a_failed_summary_lets_the_turn_go_on(make_harness: HarnessFactory) -> None:
    responses = script()
    responses[4:] = [{"status": 500, "times": 2, "text": "all done"}]  # the summary call fails
    h: Harness = await make_harness(responses, max_retries=1)
    sid = await h.turn("start: write a.txt then b.txt")
    await h.turn("second: now c.txt", sid)
    assert h.stop_reasons() == ["end_turn", "end_turn"]
    errors = [e.message for e in h.host.of("error") if not e.retrying]
    assert any("compaction" in m for m in errors)
    assert tool_ids(h.fake.requests[-1])[0] == tool_ids(h.fake.requests[3])[0]  # full history sent


# --------------------------------------------------------------------------- pure parts


def msg(
    i: int, role: str, content: list[dict[str, Any]] | None = None, kind: str = "message"
) -> StoredMessage:
    text = [{"type": "text", "text": f"m{i}"}]
    return StoredMessage(f"m{i}", f"m{i - 1}" if i else None, role, content or text, None, kind, None)  # type: ignore[arg-type]


def use(i: int) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}]


def result(i: int) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]


ROLES: dict[str, Role] = {"u": "user", "a": "assistant"}


def chain_of(shape: str) -> list[StoredMessage]:
    return [msg(i, ROLES[c]) for i, c in enumerate(shape)]


@pytest.mark.parametrize(
    ("shape", "keep", "cut"),
    [
        ("ua", 3, None),  # nothing before the only exchange
        ("uau", 3, None),
        ("uaua", 3, 3),  # one exchange summarized, the last kept
        ("uauaua", 3, 3),  # never an empty summary: the first exchange goes
        ("uauauaua", 3, 3),
        ("uauauauaua", 3, 5),
        ("uauauauaua", 1, 9),
        ("uaauaua", 2, 4),  # a cut only where a user message precedes the assistant one
    ],
)
def test_cut_points(shape: str, keep: int, cut: int | None) -> None:
    assert cut_point(chain_of(shape), keep=keep, tail_budget=10**9) == cut


def test_a_big_tail_is_shortened() -> None:
    chain = chain_of("uauauaua")
    chain[4] = msg(4, "user", [{"type": "text", "text": "x" * 40_000}])
    assert cut_point(chain, keep=3, tail_budget=1000) == 5


def test_request_size_measured_then_estimated() -> None:
    conv = Conversation("s")
    for m in [msg(0, "user"), msg(1, "assistant", use(1)), msg(2, "user", result(1))]:
        conv.messages[m.id] = m
    conv.head = "m2"
    estimated = request_size(conv, lambda: 100)
    assert estimated > 100
    conv.measured = ("m0", 50_000)
    assert 50_000 < request_size(conv, lambda: 100) < 50_100
    conv.measured = ("elsewhere", 50_000)  # a restore moved away from what was measured
    assert request_size(conv, lambda: 100) == estimated


async def test_a_compacted_conversation_reads_back_the_same_after_a_restart(
    make_harness: HarnessFactory,
) -> None:
    h: Harness = await make_harness(script())
    sid = await h.turn("start: write a.txt then b.txt")
    await h.turn("second: now c.txt", sid)
    before = await h.service.conversation(sid)
    again = h.reopen([{"text": "after restart"}])
    await again.service.load()
    after = await again.service.conversation(sid)
    assert after == before  # the originals, the summary, the rest
    await again.turn("continue", sid)
    sent = again.fake.requests[-1]["messages"]
    assert SUMMARY in sent[0]["content"][0]["text"]  # the model still gets the compacted history
