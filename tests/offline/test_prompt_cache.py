"""The fake Messages API's prompt cache: the accounting rules table-tested on the pure core (a
clock of our own), then the wire (real HTTP + SSE, the real SDK): usage shapes and breakpoint
validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic

from retrace.offline import FakeModel, Scenario
from retrace.offline.prompt_cache import (
    LOOKBACK_BLOCKS,
    PromptCache,
    estimate_tokens,
    minimum_cacheable_tokens,
    prefix_blocks,
)

MARK = {"type": "ephemeral"}
BIG = "x" * 4400  # ≈ 1100 tokens: over the 1024-token minimum on its own


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def text(value: str, mark: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if mark:
        block["cache_control"] = dict(MARK)
    return block


def request(*user_blocks: dict[str, Any], model: str = "claude-test", system: str = BIG) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 10,
        "system": [text(system, mark=True)],
        "messages": [{"role": "user", "content": list(user_blocks)}],
    }


def total(body: dict[str, Any]) -> int:
    return prefix_blocks(body)[-1].tokens


def test_a_prefix_is_written_once_then_read() -> None:
    cache = PromptCache(Clock())
    body = request(text("hello", mark=True))
    first = cache.account(body)
    assert (first.cache_read_input_tokens, first.input_tokens) == (0, 0)
    assert first.cache_creation_input_tokens == total(body)
    second = cache.account(body)
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (total(body), 0)


def test_a_longer_request_reads_the_old_prefix_and_writes_only_the_new_part() -> None:
    cache = PromptCache(Clock())
    cache.account(request(text("one", mark=True)))
    # the breakpoint moved on: a marker is not part of the prefix
    body = request(text("one"), text("two", mark=True))
    usage = cache.account(body)
    read = prefix_blocks(body)[1].tokens
    assert usage.cache_read_input_tokens == read
    assert usage.cache_creation_input_tokens == total(body) - read
    assert usage.input_tokens == 0


def test_tokens_after_the_last_breakpoint_are_plain_input() -> None:
    cache = PromptCache(Clock())
    body = request(text("question"))  # only the system prompt is marked
    usage = cache.account(body)
    assert usage.cache_creation_input_tokens == prefix_blocks(body)[0].tokens
    assert usage.input_tokens == total(body) - prefix_blocks(body)[0].tokens
    assert usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens == total(
        body
    )


def test_below_the_minimum_nothing_is_cached() -> None:
    cache = PromptCache(Clock())
    body = request(text("hi", mark=True), system="short")
    for _ in range(2):
        usage = cache.account(body)
        assert usage.cache_creation_input_tokens == usage.cache_read_input_tokens == 0
        assert usage.input_tokens == total(body)


@pytest.mark.parametrize(
    ("model", "minimum"),
    [("claude-opus-4-5-2025", 4096), ("claude-haiku-4-5", 4096), ("claude-3-5-haiku-latest", 2048),
     ("claude-sonnet-4-5", 1024), ("claude-test-model", 1024), ("other", 1024)],
)  # fmt: skip
def test_minimum_per_model(model: str, minimum: int) -> None:
    assert minimum_cacheable_tokens(model) == minimum


def test_entries_live_five_minutes_from_their_last_use() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    body = request(text("hello", mark=True))
    cache.account(body)
    clock.now += 299
    assert cache.account(body).cache_read_input_tokens == total(body)  # read: refreshed
    clock.now += 299
    assert cache.account(body).cache_read_input_tokens == total(body)
    clock.now += 301
    expired = cache.account(body)
    assert expired.cache_read_input_tokens == 0
    assert expired.cache_creation_input_tokens == total(body)


def test_reading_a_longer_prefix_keeps_the_shorter_breakpoint_entries_alive() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    cache.account(request(text("one", mark=True)))  # writes the system entry and the longer one
    clock.now += 200
    assert cache.account(request(text("one"), text("two", mark=True))).cache_read_input_tokens > 0
    clock.now += 250  # 450 s after the system entry was written, 250 s after it was last used
    other = request(text("something else", mark=True))
    assert cache.account(other).cache_read_input_tokens == prefix_blocks(other)[0].tokens


def test_a_one_hour_entry_outlives_five_minutes() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    body = request(text("hello"))
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    first = cache.account(body)
    assert first.ephemeral_1h_input_tokens == first.cache_creation_input_tokens > 0
    clock.now += 3000
    assert cache.account(body).cache_read_input_tokens == prefix_blocks(body)[0].tokens


def test_the_lookback_finds_an_entry_19_blocks_back_but_not_20() -> None:
    """A breakpoint looks at its own block boundary and the 19 before it (20 in all)."""
    blocks = [text(BIG), *(text(f"block {i}") for i in range(1, 40))]

    def marked_at(n: int) -> dict[str, Any]:
        content = [dict(b) for b in blocks[:n]]
        content[-1]["cache_control"] = dict(MARK)
        return request(*content, system="short")  # the system alone is below the minimum

    for distance, found in [(LOOKBACK_BLOCKS - 1, True), (LOOKBACK_BLOCKS, False)]:
        cache = PromptCache(Clock())
        first = marked_at(10)
        cache.account(first)
        read = cache.account(marked_at(10 + distance)).cache_read_input_tokens
        assert read == (total(first) if found else 0), distance


def test_the_model_is_part_of_the_key() -> None:
    cache = PromptCache(Clock())
    cache.account(request(text("hello", mark=True)))
    assert cache.account(request(text("hello", mark=True), model="claude-other")).cache_read_input_tokens == 0


def test_a_changed_block_invalidates_the_prefix_after_it() -> None:
    cache = PromptCache(Clock())
    cache.account(request(text("one"), text("two", mark=True)))
    changed = request(text("ONE"), text("two", mark=True))
    usage = cache.account(changed)
    assert usage.cache_read_input_tokens == prefix_blocks(changed)[0].tokens  # the system entry only


def test_token_estimate_is_deterministic() -> None:
    assert estimate_tokens({"b": 1, "a": "xyz"}) == estimate_tokens({"a": "xyz", "b": 1})
    assert estimate_tokens(text("x" * 400)) == estimate_tokens(text("x" * 400, mark=True))


# --------------------------------------------------------------------------- the wire


@pytest.fixture
def fake() -> Iterator[FakeModel]:
    with FakeModel(Scenario.model_validate({"responses": []})) as model:
        yield model


def client(fake: FakeModel) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=fake.base_url, api_key="test-key", max_retries=0)


async def test_usage_in_the_message_and_in_the_stream(fake: FakeModel) -> None:
    body = request(text("hello", mark=True))
    c = client(fake)
    plain = await c.messages.create(**body)
    assert plain.usage.cache_creation_input_tokens == total(body)
    assert plain.usage.cache_read_input_tokens == 0
    assert plain.usage.cache_creation is not None
    assert plain.usage.cache_creation.ephemeral_5m_input_tokens == total(body)
    async with c.messages.stream(**body) as stream:
        starts = [e async for e in stream if e.type == "message_start"]
        final = await stream.get_final_message()
    assert starts[0].message.usage.cache_read_input_tokens == total(body)
    assert final.usage.cache_read_input_tokens == total(body)
    assert final.usage.cache_creation_input_tokens == 0
    assert final.usage.input_tokens == 0
    assert final.usage.output_tokens > 1  # message_delta's count replaced message_start's
    assert fake.usages[1]["cache_read_input_tokens"] == total(body)


BAD_PLACEMENTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "five breakpoints",
        {"messages": [{"role": "user", "content": [text(f"b{i}", mark=True) for i in range(5)]}]},
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    (
        "not ephemeral",
        {"messages": [{"role": "user", "content": [{**text("a"), "cache_control": {"type": "forever"}}]}]},
        "Input should be 'ephemeral'",
    ),
    (
        "an unknown field",
        {"messages": [{"role": "user", "content": [{**text("a"), "cache_control": {**MARK, "scope": "x"}}]}]},
        "Extra inputs are not permitted",
    ),
    (
        "a thinking block",
        {
            "messages": [
                {"role": "user", "content": [text("a")]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": MARK}
                    ],
                },
                {"role": "user", "content": [text("b")]},
            ]
        },
        "'thinking' blocks cannot be cached",
    ),
    (
        "1h after 5m",
        {
            "system": [text("s", mark=True)],
            "messages": [
                {"role": "user", "content": [{**text("a"), "cache_control": {**MARK, "ttl": "1h"}}]}
            ],
        },
        "must not come after",
    ),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD_PLACEMENTS, ids=[b[0] for b in BAD_PLACEMENTS])
async def test_bad_breakpoints_are_rejected(
    fake: FakeModel, name: str, change: dict[str, Any], message: str
) -> None:
    body = {"model": "claude-test", "max_tokens": 10, **change}
    with pytest.raises(anthropic.BadRequestError) as info:
        await client(fake).messages.create(**body)
    assert message in str(info.value), name
    assert fake.statuses == [400]
