"""Pure cores, table-tested: where breakpoints go (agent/caching.py) and how long a retry waits
(agent/retry.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from retrace.agent.caching import breakpoint_count, with_cache_breakpoints
from retrace.agent.retry import asked_wait_s, retry_delay
from retrace.offline.validation import validate_request

TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("a", "b")]
U = {"role": "user", "content": [{"type": "text", "text": "u"}]}
A = {"role": "assistant", "content": [{"type": "text", "text": "a"}]}
A_TOOL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]}
R = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 5, "system": "sys", "tools": TOOLS, "messages": list(messages)}


def marked_messages(out: dict[str, Any]) -> list[int]:
    return [i for i, m in enumerate(out["messages"]) if any("cache_control" in b for b in m["content"])]


@pytest.mark.parametrize(
    ("messages", "marked"),
    [
        ([U], [0]),
        ([U, A_TOOL, R], [0, 2]),
        ([U, A_TOOL, R, A, U], [2, 4]),
        ([U, A, U, A_TOOL, R], [2, 4]),
    ],
)
def test_breakpoints_on_the_last_message_and_the_previous_request_end(
    messages: list[dict[str, Any]], marked: list[int]
) -> None:
    sent = body(*messages)
    out = with_cache_breakpoints(sent)
    assert marked_messages(out) == marked
    assert "cache_control" in out["tools"][-1] and "cache_control" not in out["tools"][0]
    assert out["system"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert breakpoint_count(out) == 2 + len(marked) <= 4
    validate_request(out)  # the fake API's rules accept it
    assert sent == body(*messages)  # the input is not changed in place
    assert with_cache_breakpoints(out) == out  # deterministic, and old markers replaced


def test_thinking_blocks_are_never_marked() -> None:
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s"}
    last = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    out = with_cache_breakpoints(body(U, {"role": "assistant", "content": [thinking]}, last))
    assert "cache_control" not in out["messages"][1]["content"][0]


NOW = datetime(2026, 12, 2, 3, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "200", "retry-after": "7"}, 0.2),  # the precise one wins
        ({"retry-after": "Wed, 02 Dec 2026 03:00:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 02 Dec 2026 02:59:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "x", "retry-after": "2"}, 2.0),
        ({"retry-after": "-3"}, 0.0),
    ],
)
def test_asked_wait(headers: dict[str, str], wait: float | None) -> None:
    assert asked_wait_s(headers, NOW) == wait


@pytest.mark.parametrize(
    ("asked", "attempt", "delay"),
    [
        (None, 0, 1.0),
        (None, 3, 8.0),
        (None, 10, 60.0),
        (5.0, 0, 5.0),
        (0.0, 2, 0.0),
        (60.0, 0, 60.0),
        (61.0, 0, None),
    ],
)
def test_retry_delay(asked: float | None, attempt: int, delay: float | None) -> None:
    assert retry_delay(asked, attempt, base_s=1.0, max_wait_s=60.0) == delay
