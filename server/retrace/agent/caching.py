"""Prompt caching: where a request's ``cache_control`` breakpoints go (the one place they are set).

The Messages API caches the exact request prefix in the order tools → system → messages, up to
each breakpoint (at most 4), and a later request reads the longest prefix it finds among the
block boundaries at and shortly before (20 blocks) its own breakpoints. A turn of this agent is
a series of requests, each the previous one plus the assistant's reply and the tool results, so:

1. the last tool: the tools alone (kept when only the system prompt changes);
2. the last system block: the stable tools + system prefix, shared by every request of the
   workspace, and still valid after a summary replaced the conversation;
3. the last block of the user message that ended the previous request (the message before the
   last assistant message): exactly the prefix the previous request wrote, so this request reads
   it whatever the reply's size (however many tool calls, beyond the 20-block lookback); after a
   conversation restore into or after a batch, the history up to there is unchanged, so the
   restored request reads it too;
4. the last block of the last message: written now, read by the next request.

Pure: the request is copied, never changed in place (the stored conversation stays as it is).
Deterministic: breakpoints depend only on the request's shape, so the same history always gives
the same prefixes. Nothing volatile (a time, an id made per request) may sit before a breakpoint:
it would make every prefix new and the cache useless.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
_UNCACHEABLE = {"thinking", "redacted_thinking"}


def _marked(block: Mapping[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": dict(EPHEMERAL)}


def _mark_last(blocks: list[Any]) -> list[Any]:
    """The blocks with a breakpoint on the last one that can carry it (unchanged if none can)."""
    for i in range(len(blocks) - 1, -1, -1):
        block = blocks[i]
        if isinstance(block, Mapping) and block.get("type") not in _UNCACHEABLE:
            return [*blocks[:i], _marked(block), *blocks[i + 1 :]]
    return blocks


def _content_blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _request_ends(messages: list[Any]) -> list[int]:
    """The indices of the last message and of the user message before the last assistant one."""
    if not messages:
        return []
    last = len(messages) - 1
    before = next(
        (i for i in range(last - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    previous = before - 1 if before is not None and before > 0 else None
    if previous is not None and messages[previous].get("role") == "user":
        return [previous, last]
    return [last]


def with_cache_breakpoints(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the request body with its breakpoints placed (any it carried are replaced)."""
    out = {k: v for k, v in body.items()}
    tools = [_without_marker(t) for t in body.get("tools") or []]
    if tools:
        out["tools"] = _mark_last(tools)
    system = [_without_marker(b) for b in _content_blocks(body.get("system"))]
    if system:
        out["system"] = _mark_last(system)
    messages = [
        {**m, "content": [_without_marker(b) for b in _content_blocks(m.get("content"))]}
        for m in body.get("messages") or []
    ]
    for index in _request_ends(messages):
        messages[index]["content"] = _mark_last(messages[index]["content"])
    out["messages"] = messages
    return out


def _without_marker(block: Any) -> Any:
    if isinstance(block, Mapping) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def breakpoint_count(body: Mapping[str, Any]) -> int:
    """How many top-level blocks of a request carry a breakpoint (for checks and tests)."""
    count = sum(1 for t in body.get("tools") or [] if isinstance(t, Mapping) and "cache_control" in t)
    system = body.get("system")
    count += sum(1 for b in (system if isinstance(system, list) else []) if "cache_control" in b)
    for message in body.get("messages") or []:
        content = message.get("content")
        count += sum(1 for b in (content if isinstance(content, list) else []) if "cache_control" in b)
    return count
