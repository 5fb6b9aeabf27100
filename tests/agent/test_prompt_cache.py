"""Prompt caching and retry-after, end to end: the agent against the fake Messages API over real
HTTP + SSE (the real SDK), which validates every request's breakpoints and accounts cache writes
and reads as the API documents."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from retrace.agent.caching import breakpoint_count
from retrace.engine.store.events import UsageEvent, event_json
from retrace.offline.prompt_cache import prefix_blocks

from .conftest import Harness, HarnessFactory
from .test_agent_loop import e2e_responses, tool_checkpoints


def stable_prefix_tokens(body: dict[str, Any]) -> int:
    """Input tokens of the tools + system prefix of a request."""
    blocks = prefix_blocks(body)
    return blocks[len(body.get("tools") or []) + len(body["system"]) - 1].tokens


def marked(blocks: list[dict[str, Any]]) -> list[bool]:
    return ["cache_control" in b for b in blocks]


async def test_breakpoints_are_placed_and_later_requests_read_the_cache(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(e2e_responses())
    sid = await h.turn("do the e2e thing")
    await h.turn("and now?", sid)
    assert set(h.fake.statuses) == {200}  # the fake rejects an invalid breakpoint with a 400
    assert len(h.fake.requests) >= 4
    for body in h.fake.requests:
        assert 1 <= breakpoint_count(body) <= 4
        assert marked(body["tools"])[-1] and not any(marked(body["tools"])[:-1])
        assert marked(body["system"])[-1]
        assert marked(body["messages"][-1]["content"])[-1]  # the moving breakpoint
    for previous, body in itertools.pairwise(h.fake.requests):
        # ... and the previous request's end, so the prefix it wrote is read whatever came since
        end = len(previous["messages"]) - 1
        assert marked(body["messages"][end]["content"])[-1]

    usages = h.fake.usages
    assert usages[0]["cache_read_input_tokens"] == 0
    assert usages[0]["cache_creation_input_tokens"] > 0
    for before, usage in itertools.pairwise(usages):
        # every later request reads all the previous one wrote and writes only what is new
        assert usage["cache_read_input_tokens"] == (
            before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        )
    view = await h.service.conversation(sid)
    assert view.usage.cache_read_input_tokens == sum(u["cache_read_input_tokens"] for u in usages)
    assert view.usage.cache_creation_input_tokens == sum(u["cache_creation_input_tokens"] for u in usages)
    assert view.usage.input_tokens == sum(u["input_tokens"] for u in usages)
    journaled = [event_json(e) for e in h.engine.events(sid, only=(UsageEvent,))]
    assert [e["cacheReadInputTokens"] for e in journaled] == [u["cache_read_input_tokens"] for u in usages]
    events = h.host.of("usage")
    assert [e.cache_creation_input_tokens for e in events] == [
        u["cache_creation_input_tokens"] for u in usages
    ]
    assert events[-1].total_cache_read_input_tokens == view.usage.cache_read_input_tokens


async def test_without_caching_nothing_is_marked_or_cached(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(e2e_responses(), prompt_caching=False)
    await h.turn("do the e2e thing")
    assert all(breakpoint_count(body) == 0 for body in h.fake.requests)
    assert all(u["cache_read_input_tokens"] == u["cache_creation_input_tokens"] == 0 for u in h.fake.usages)


async def test_a_conversation_restore_still_reads_the_cached_prefix(make_harness: HarnessFactory) -> None:
    after = {"match": {"lastUserTextContains": "after restore"}, "text": "noted"}
    h: Harness = await make_harness([*e2e_responses()[:3], after, after])
    sid = await h.turn("prompt one")
    _write_cp, edit_cp, _run_cp = tool_checkpoints(h, sid)
    # Into the middle of a batch: the history up to the assistant message of that batch is the
    # one the earlier requests sent, so the restored request reads it.
    await h.service.restore_conversation(sid, edit_cp.id)
    await h.turn("after restore", sid)
    body, usage = h.fake.requests[-1], h.fake.usages[-1]
    assert h.fake.statuses[-1] == 200
    assert usage["cache_read_input_tokens"] > stable_prefix_tokens(body)
    kept = prefix_blocks(body)
    # it read exactly up to the end of the request before the batch's reply
    restored_at = next(i for i, m in enumerate(body["messages"]) if m["role"] == "assistant" and i >= 3) - 1
    offset = len(body["tools"]) + len(body["system"])
    end_block = offset + sum(len(m["content"]) for m in body["messages"][: restored_at + 1]) - 1
    assert usage["cache_read_input_tokens"] == kept[end_block].tokens

    # Back to the first checkpoint, right after a single-call batch: the restored results
    # start with that call's own result, the block the second request ended with, so the
    # prefix through it is read (everything up to the restored point).
    first = tool_checkpoints(h, sid)[0]
    await h.service.restore_conversation(sid, first.id)
    await h.turn("after restore again", sid)
    body, usage = h.fake.requests[-1], h.fake.usages[-1]
    unmarked = {
        k: v for k, v in h.fake.requests[1]["messages"][2]["content"][0].items() if k != "cache_control"
    }
    assert body["messages"][2]["content"][0] == unmarked
    offset = len(body["tools"]) + len(body["system"])
    first_result = offset + len(body["messages"][0]["content"]) + len(body["messages"][1]["content"])
    assert usage["cache_read_input_tokens"] == prefix_blocks(body)[first_result].tokens


# --------------------------------------------------------------------------- retry-after


@pytest.mark.parametrize(
    ("status", "header", "wait_s"),
    [(429, {"retryAfterMs": "400"}, 0.4), (529, {"retryAfter": "1"}, 1.0), (503, {"retryAfter": "1"}, 1.0)],
)
async def test_retry_waits_as_long_as_the_api_asks(
    make_harness: HarnessFactory, status: int, header: dict[str, str], wait_s: float
) -> None:
    h: Harness = await make_harness([{"status": status, "times": 1, "text": "after the wait", **header}])
    await h.turn("hi")
    assert h.fake.statuses == [status, 200]
    assert h.stop_reasons() == ["end_turn"]
    # the backoff alone would have waited retry_base_delay_s (0.01 s)
    assert h.fake.times[1] - h.fake.times[0] >= wait_s
    (retrying,) = h.host.of("error")
    assert retrying.retrying and f"retrying in {wait_s:g}s" in retrying.message


async def test_a_wait_longer_than_the_bound_is_not_waited_for(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [{"status": 429, "times": 1, "retryAfter": "3600", "text": "later"}], max_retry_wait_s=30
    )
    await h.turn("hi")
    assert h.fake.statuses == [429]
    assert h.stop_reasons() == ["error"]
    (error,) = h.host.of("error")
    assert not error.retrying
    assert "asks to wait 3600s" in error.message


async def test_a_retry_wait_is_cancellable(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([{"status": 429, "times": 1, "retryAfter": "50", "text": "later"}])
    sid, _ = await h.service.prompt("hi")
    for _ in range(400):
        if h.host.of("error"):
            break
        await asyncio.sleep(0.05)
    assert h.host.of("error")[0].retrying
    assert await h.service.cancel(sid) is True
    assert h.stop_reasons() == ["cancelled"]
    assert h.fake.statuses == [429]


async def test_after_a_summary_the_unchanged_prefix_is_still_read(make_harness: HarnessFactory) -> None:
    summary_reply = {"text": "SUMMARY: created hello.txt; src/app.py annotated."}
    after = {"match": {"lastUserTextContains": "go on"}, "text": "continuing"}
    h: Harness = await make_harness([*e2e_responses()[:3], summary_reply, after, summary_reply, after])
    sid = await h.turn("prompt one")
    write_cp, _edit_cp, run_cp = tool_checkpoints(h, sid)

    # "from" the first call: prompt → write → its result are kept as they were sent, so the next
    # request reads them (the summary joins the kept last user message, after its breakpoint).
    await h.service.summarize(write_cp.id, "from")
    await h.turn("go on", sid)
    body, usage = h.fake.requests[-1], h.fake.usages[-1]
    offset = len(body["tools"]) + len(body["system"])
    assert usage["cache_read_input_tokens"] >= prefix_blocks(body)[offset].tokens > stable_prefix_tokens(body)

    # "upTo" replaces the start of the conversation: only tools + system are still the same.
    await h.service.restore_conversation(sid, run_cp.id)
    await h.service.summarize(run_cp.id, "upTo")
    await h.turn("go on", sid)
    body, usage = h.fake.requests[-1], h.fake.usages[-1]
    assert usage["cache_read_input_tokens"] == stable_prefix_tokens(body)
