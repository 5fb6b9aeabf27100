"""The fake model's OpenAI chat completions (``POST /v1/chat/completions``) against the real
``openai`` SDK over real HTTP: the same scenarios as the Messages API, OpenAI's SSE and error
shapes, the real API's request rules (a 400 in OpenAI's shape), recorded with their wire."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import httpx2
import openai
import pytest
from openai import AsyncOpenAI

from retrace.offline import FakeModel

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "write",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def sdk(fake: FakeModel) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0)


def post(fake: FakeModel, body: Any, path: str = "/v1/chat/completions") -> tuple[int, Any]:
    """POST without the SDK (to send what the SDK never would)."""
    request = urllib.request.Request(
        fake.base_url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def call(cid: str, name: str = "write_file", arguments: Any = "{}") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


async def test_stream_parses_in_the_sdk_with_tool_calls_finish_and_usage(fake_factory: Any) -> None:
    fake = fake_factory(
        {
            "text": "Writing two files, streamed in several small pieces.",
            "toolCalls": [
                {"name": "write_file", "input": {"path": "a.txt", "content": "x" * 40}},
                {"name": "write_file", "input": {"path": "b.txt"}},
            ],
        }
    )
    stream = await sdk(fake).chat.completions.create(
        model="qwen",
        messages=[{"role": "user", "content": "go"}],
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Writing two files, streamed in several small pieces."
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 2, "streamed in pieces"
    pieces: dict[int, list[str]] = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            pieces.setdefault(tc.index, []).append(tc.function.arguments or "" if tc.function else "")
    assert [json.loads("".join(p)) for _, p in sorted(pieces.items())] == [
        {"path": "a.txt", "content": "x" * 40},
        {"path": "b.txt"},
    ]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "tool_calls"
    ]
    assert (
        chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    )
    assert fake.wires == ["chat"] and fake.statuses == [200]
    assert fake.requests[0]["stream_options"] == {"include_usage": True}
    assert fake.headers[0]["authorization"] == "Bearer test-key"


async def test_no_usage_chunk_unless_asked(fake_factory: Any) -> None:
    fake = fake_factory({"text": "hi"})
    stream = await sdk(fake).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    assert all(c.usage is None for c in [c async for c in stream])


async def test_a_whole_completion_and_the_stop_reasons(fake_factory: Any) -> None:
    fake = fake_factory(
        {"text": "one"},
        {"stopReason": "max_tokens", "text": "cut"},
        {"refusal": True, "text": "no"},
        {"toolCalls": [{"name": "write_file", "input": {"path": "p"}}]},
    )
    client = sdk(fake)
    finishes = []
    for _ in range(4):
        done = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=TOOLS
        )
        finishes.append(done.choices[0].finish_reason)
    assert finishes == ["stop", "length", "content_filter", "tool_calls"]
    assert done.choices[0].message.content is None
    (tool_call,) = done.choices[0].message.tool_calls or []
    assert tool_call.function.arguments == '{"path": "p"}'  # type: ignore[union-attr]


async def test_scripted_errors_in_openai_shape_with_retry_headers(fake_factory: Any) -> None:
    fake = fake_factory(
        {"status": 429, "times": 1, "retryAfter": "3", "text": "later"}, {"status": 503, "text": "x"}
    )
    client = sdk(fake)
    with pytest.raises(openai.RateLimitError) as limited:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert limited.value.response.headers["retry-after"] == "3"
    assert limited.value.body == {
        "message": "Number of request tokens has exceeded your per-minute rate limit",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    done = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert done.choices[0].message.content == "later"
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert fake.statuses == [429, 200, 503] and fake.wires == ["chat"] * 3


async def test_stream_faults_break_in_the_sdk(fake_factory: Any) -> None:
    fake = fake_factory(
        {"truncateStream": True, "text": "a long text that will be cut off " * 3},
        {"malformedEvent": True, "text": "some text before the garbage arrives"},
    )
    client = sdk(fake)
    for error in ((openai.APIConnectionError, httpx2.HTTPError), ValueError):  # cut off; not JSON
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
        with pytest.raises(error):
            async for _ in stream:
                pass


def test_messages_and_chat_share_one_script_and_are_told_apart(fake_factory: Any) -> None:
    fake = fake_factory({"text": "first"}, {"text": "second"})
    status, body = post(
        fake, {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a"}]}, "/v1/messages"
    )
    assert status == 200 and body["content"][0]["text"] == "first"
    status, body = post(fake, {"model": "m", "messages": [{"role": "user", "content": "b"}]})
    assert status == 200 and body["choices"][0]["message"]["content"] == "second"
    assert fake.wires == ["anthropic", "chat"]
    status, body = post(fake, {"model": "m", "messages": []}, "/v1/chat/completion")
    assert status == 404 and body["error"]["type"] == "not_found_error"  # no route: the Messages shape


def test_scenario_matches_on_tool_messages_and_error_results(fake_factory: Any) -> None:
    fake = fake_factory(
        {"match": {"toolResultIsError": True}, "text": "saw the error"},
        {"match": {"lastToolResultContains": "needle"}, "text": "saw the needle"},
    )
    base = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
    ]
    _, body = post(
        fake,
        {"model": "m", "messages": [*base, {"role": "tool", "tool_call_id": "c1", "content": "Error: boom"}]},
    )
    assert body["choices"][0]["message"]["content"] == "saw the error"
    _, body = post(
        fake,
        {"model": "m", "messages": [*base, {"role": "tool", "tool_call_id": "c1", "content": "a needle"}]},
    )
    assert body["choices"][0]["message"]["content"] == "saw the needle"


U = {"role": "user", "content": "go"}
A_CALLS = {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]}


def answer(cid: str, content: Any = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": content}


INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("no messages", {"model": "m", "messages": []}, "non-empty"),
    ("no model", {"messages": [U]}, "model"),
    (
        "an Anthropic top-level field",
        {"model": "m", "messages": [U], "system": "s"},
        "Unrecognized request argument",
    ),
    ("max_tokens 0", {"model": "m", "messages": [U], "max_tokens": 0}, "max_tokens"),
    (
        "stream_options without stream",
        {"model": "m", "messages": [U], "stream_options": {"include_usage": True}},
        "stream_options",
    ),
    ("unknown role", {"model": "m", "messages": [{"role": "model", "content": "x"}]}, "role"),
    (
        "cache_control on a message",
        {"model": "m", "messages": [{**U, "cache_control": {"type": "ephemeral"}}]},
        "cache_control",
    ),
    (
        "Anthropic blocks as content",
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
        "type",
    ),
    ("empty content list", {"model": "m", "messages": [{"role": "user", "content": []}]}, "non-empty array"),
    (
        "null content without tool calls",
        {"model": "m", "messages": [U, {"role": "assistant", "content": None}]},
        "null",
    ),
    ("a call left unanswered at the end", {"model": "m", "messages": [U, A_CALLS, answer("c1")]}, "c2"),
    (
        "a user message before the answers",
        {"model": "m", "messages": [U, A_CALLS, answer("c1"), U, answer("c2")]},
        "c2",
    ),
    ("an answer to no call", {"model": "m", "messages": [U, answer("c1")]}, "answers none"),
    ("an answer with a wrong id", {"model": "m", "messages": [U, A_CALLS, answer("c1"), answer("c3")]}, "c3"),
    (
        "an answer given twice",
        {"model": "m", "messages": [U, A_CALLS, answer("c1"), answer("c1"), answer("c2")]},
        "answers none",
    ),
    (
        "arguments as an object",
        {
            "model": "m",
            "messages": [U, {"role": "assistant", "tool_calls": [call("c1", arguments={})]}, answer("c1")],
        },
        "expected a string",
    ),
    (
        "arguments not JSON",
        {
            "model": "m",
            "messages": [
                U,
                {"role": "assistant", "tool_calls": [call("c1", arguments='{"a": ')]},
                answer("c1"),
            ],
        },
        "not a JSON object",
    ),
    (
        "a call with no id",
        {"model": "m", "messages": [U, {"role": "assistant", "tool_calls": [call("")]}]},
        "id",
    ),
    (
        "ids repeated across the conversation",
        {
            "model": "m",
            "messages": [
                U,
                {"role": "assistant", "tool_calls": [call("c1")]},
                answer("c1"),
                {"role": "assistant", "tool_calls": [call("c1")]},
                answer("c1"),
            ],
        },
        "duplicate",
    ),
    (
        "tools in the Anthropic shape",
        {"model": "m", "messages": [U], "tools": [{"name": "x", "input_schema": {"type": "object"}}]},
        "tools[0]",
    ),
    (
        "a bad tool name",
        {"model": "m", "messages": [U], "tools": [{"type": "function", "function": {"name": "a b"}}]},
        "name",
    ),
    ("duplicate tool names", {"model": "m", "messages": [U], "tools": [*TOOLS, *TOOLS]}, "duplicate"),
    (
        "parameters not an object schema",
        {
            "model": "m",
            "messages": [U],
            "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "string"}}}],
        },
        "schema",
    ),
]


@pytest.mark.parametrize(("body", "needle"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_requests_get_a_400_in_openai_shape(
    fake_factory: Any, body: dict[str, Any], needle: str
) -> None:
    fake = fake_factory({"text": "never"})
    status, error = post(fake, body)
    assert status == 400
    assert set(error) == {"error"} and set(error["error"]) == {"message", "type", "param", "code"}
    assert error["error"]["type"] == "invalid_request_error"
    assert needle in error["error"]["message"]
    assert fake.statuses == [400] and fake.wires == ["chat"] and fake.requests == [body]


VALID: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "answers in any order, then text",
        [U, A_CALLS, answer("c2"), answer("c1", [{"type": "text", "text": "ok"}]), U],
    ),
    (
        "a system and a developer message",
        [{"role": "system", "content": "s"}, {"role": "developer", "content": "d"}, U],
    ),
    (
        "assistant text and calls",
        [U, {"role": "assistant", "content": "hm", "tool_calls": [call("c1")]}, answer("c1")],
    ),
    ("ends with an assistant message", [U, {"role": "assistant", "content": "hi"}]),
]


@pytest.mark.parametrize("messages", [c[1] for c in VALID], ids=[c[0] for c in VALID])
def test_valid_requests_are_answered(fake_factory: Any, messages: list[dict[str, Any]]) -> None:
    fake = fake_factory({"text": "fine"})
    status, body = post(fake, {"model": "m", "messages": messages, "tools": TOOLS, "max_tokens": 10})
    assert status == 200, body
    assert body["choices"][0]["message"]["content"] == "fine"
