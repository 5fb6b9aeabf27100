"""The Messages API's request rules, as the fake Messages API enforces them.

Used by the fake model (tests and the offline demo) only: it answers an invalid request with a
400 in the real error shape, so a test or a demo that sends an invalid conversation, or places
cache breakpoints badly, fails. The agent does not validate what it sends: the real API is the
judge of real requests (a stricter local copy of its rules could only refuse valid ones).

Rules (those of the real API that a conversation can break): ``model`` and a positive
``max_tokens`` present; ``messages`` non-empty, starting with ``user`` and alternating
``user``/``assistant``; every content non-empty; text blocks non-empty; ``tool_use`` only in
assistant messages, ids unique; every ``tool_use`` answered by a ``tool_result`` in the very
next user message, where tool results come before any text; no orphan ``tool_result``;
``tools`` well-formed (name pattern, unique, ``input_schema`` an object schema); prompt-cache
breakpoints (``cache_control``): at most 4 in a request, each exactly ``{"type": "ephemeral"}``
with an optional ``ttl`` of ``"5m"`` or ``"1h"`` (no ``"1h"`` after a ``"5m"``), only on a tool,
a system text block or a message block that can be cached (not ``thinking`` ones).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_USER_BLOCKS = {"text", "image", "document", "tool_result"}
_ASSISTANT_BLOCKS = {"text", "tool_use", "thinking", "redacted_thinking"}
_UNCACHEABLE_BLOCKS = {"thinking", "redacted_thinking"}
MAX_BREAKPOINTS = 4
_TTLS = ("1h", "5m")  # in the order they may appear


class InvalidRequestError(ValueError):
    """The request would be rejected by the Messages API (message is the API's one-liner)."""


def validate_request(body: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidRequestError` unless ``body`` is a request the Messages API accepts."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise InvalidRequestError("max_tokens: Field required (a positive integer)")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise InvalidRequestError("system: Input should be a string or a list of text blocks")
    tools = body.get("tools")
    if tools is not None:
        validate_tools(tools)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InvalidRequestError("messages: Field required")
    validate_messages(messages)
    validate_cache_control(body)


def _marked(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], object]]:
    """(where, block, its cache_control) for every block that carries one, in prefix order
    (tools, system, messages; a tool result's own content blocks included)."""
    found: list[tuple[str, Mapping[str, Any], object]] = []

    def visit(where: str, block: object) -> None:
        if isinstance(block, Mapping) and "cache_control" in block:
            found.append((where, block, block["cache_control"]))

    for i, tool in enumerate(body.get("tools") or []):
        visit(f"tools.{i}", tool)
    system = body.get("system")
    for j, block in enumerate(system if isinstance(system, list) else []):
        visit(f"system.{j}", block)
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            visit(f"messages.{i}.content.{j}", block)
            inner = block.get("content") if isinstance(block, Mapping) else None
            for k, sub in enumerate(inner if isinstance(inner, list) else []):
                visit(f"messages.{i}.content.{j}.content.{k}", sub)
    return found


def cache_ttl(marker: Mapping[str, Any]) -> str:
    """A valid breakpoint's time to live (``"5m"`` unless it asks for ``"1h"``)."""
    return str(marker.get("ttl", "5m"))


def validate_cache_control(body: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidRequestError` unless the request's cache breakpoints are valid."""
    marked = _marked(body)
    if len(marked) > MAX_BREAKPOINTS:
        raise InvalidRequestError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}."
        )
    last_ttl = 0
    for where, block, marker in marked:
        if block.get("type") in _UNCACHEABLE_BLOCKS:
            raise InvalidRequestError(f"{where}.cache_control: {block.get('type')!r} blocks cannot be cached")
        if not isinstance(marker, Mapping) or marker.get("type") != "ephemeral":
            raise InvalidRequestError(f"{where}.cache_control.type: Input should be 'ephemeral'")
        extra = sorted(set(marker) - {"type", "ttl"})
        if extra:
            raise InvalidRequestError(f"{where}.cache_control.{extra[0]}: Extra inputs are not permitted")
        ttl = cache_ttl(marker)
        if ttl not in _TTLS:
            raise InvalidRequestError(f"{where}.cache_control.ttl: Input should be '5m' or '1h'")
        if _TTLS.index(ttl) < last_ttl:
            raise InvalidRequestError(
                f"{where}: a ttl='1h' cache_control block must not come after a ttl='5m' block"
            )
        last_ttl = _TTLS.index(ttl)


def validate_tools(tools: object) -> None:
    if not isinstance(tools, list):
        raise InvalidRequestError("tools: Input should be a valid list")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise InvalidRequestError(f"tools.{i}: Input should be an object")
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise InvalidRequestError(
                f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if name in seen:
            raise InvalidRequestError(f"tools: Tool names must be unique (duplicate {name!r})")
        seen.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise InvalidRequestError(f"tools.{i}.input_schema: must be a JSON Schema with type 'object'")
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            raise InvalidRequestError(f"tools.{i}.description: Input should be a valid string")


def _blocks(message: Mapping[str, Any], i: int) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            raise InvalidRequestError(f"messages.{i}: content must be non-empty")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise InvalidRequestError(f"messages.{i}: all messages must have non-empty content")
    for j, block in enumerate(content):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise InvalidRequestError(f"messages.{i}.content.{j}: each content block needs a 'type'")
        if block["type"] == "text" and not (isinstance(block.get("text"), str) and block["text"]):
            raise InvalidRequestError(f"messages.{i}.content.{j}: text content blocks must be non-empty")
    return list(content)


def _check_role(message: Any, i: int) -> str:
    if not isinstance(message, Mapping):
        raise InvalidRequestError(f"messages.{i}: Input should be an object")
    role = message.get("role")
    expected = "user" if i % 2 == 0 else "assistant"
    if role not in ("user", "assistant"):
        raise InvalidRequestError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    if role != expected:
        raise InvalidRequestError(
            f"messages: roles must alternate between 'user' and 'assistant', starting with "
            f"'user' (messages.{i} is {role!r})"
        )
    return str(role)


def _assistant_tool_uses(blocks: list[Mapping[str, Any]], i: int, seen_ids: set[str]) -> list[str]:
    """The tool_use ids of an assistant message (checked: allowed blocks, unique ids)."""
    ids: list[str] = []
    for j, block in enumerate(blocks):
        kind = block["type"]
        if kind not in _ASSISTANT_BLOCKS:
            raise InvalidRequestError(f"messages.{i}.content.{j}: {kind!r} blocks are not allowed here")
        if kind != "tool_use":
            continue
        tid = block.get("id")
        if not isinstance(tid, str) or not tid:
            raise InvalidRequestError(f"messages.{i}.content.{j}.id: Field required")
        if tid in seen_ids:
            raise InvalidRequestError(f"messages.{i}.content.{j}: tool_use ids must be unique ({tid})")
        if not isinstance(block.get("name"), str) or not isinstance(block.get("input"), Mapping):
            raise InvalidRequestError(f"messages.{i}.content.{j}: tool_use needs 'name' and 'input'")
        seen_ids.add(tid)
        ids.append(tid)
    return ids


def _check_user_answers(blocks: list[Mapping[str, Any]], i: int, pending: list[str]) -> None:
    """A user message answers every pending tool_use, once each, before any text."""
    answered: list[str] = []
    text_seen = False
    for j, block in enumerate(blocks):
        kind = block["type"]
        if kind not in _USER_BLOCKS:
            raise InvalidRequestError(f"messages.{i}.content.{j}: {kind!r} blocks are not allowed here")
        if kind != "tool_result":
            text_seen = True
            continue
        tid = block.get("tool_use_id")
        if tid not in pending:
            raise InvalidRequestError(
                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{tid}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                "previous message."
            )
        if tid in answered:
            raise InvalidRequestError(f"messages.{i}.content.{j}: duplicate tool_result for {tid}")
        if text_seen:
            raise InvalidRequestError(
                f"messages.{i}: tool_result blocks must come first in the content array, before any text"
            )
        answered.append(str(tid))
    missing = [tid for tid in pending if tid not in answered]
    if missing:
        raise InvalidRequestError(
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message."
        )


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`InvalidRequestError` unless ``messages`` is a valid conversation."""
    if not messages:
        raise InvalidRequestError("messages: at least one message is required")
    seen_ids: set[str] = set()
    pending: list[str] = []  # tool_use ids of the previous assistant message
    for i, message in enumerate(messages):
        role = _check_role(message, i)
        blocks = _blocks(message, i)
        if role == "assistant":
            pending = _assistant_tool_uses(blocks, i, seen_ids)
        else:
            _check_user_answers(blocks, i, pending)
            pending = []
    if pending:
        raise InvalidRequestError(
            f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(pending)}"
        )
