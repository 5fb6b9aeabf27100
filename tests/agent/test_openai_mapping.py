"""The agent's conversation form ↔ OpenAI chat completions (retrace.agent.model.openai_mapping),
table-tested both ways. Every mapped request is also checked by the fake endpoint's validator
(the real API's rules), so a mapping that the API would refuse fails here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from retrace.agent.model.interface import ModelError, ModelRequest, ReplyUsage
from retrace.agent.model.openai_mapping import (
    ReplyAssembler,
    chat_body,
    chat_messages,
    chat_tool,
    reply_of_completion,
    usage_of,
)
from retrace.offline.openai_validation import validate_chat

CC = {"cache_control": {"type": "ephemeral"}}


def use(tid: str, name: str = "read_file", **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": tool_input}


def result(tid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": content, **extra}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def request(messages: list[dict[str, Any]], system: Any = "be brief", tools: Any = None) -> ModelRequest:
    return ModelRequest(
        model="qwen-test", max_tokens=512, system=system, messages=messages, tools=tools or []
    )


# --------------------------------------------------------------------------- request


REQUEST_CASES: list[tuple[str, Any, list[dict[str, Any]], list[dict[str, Any]]]] = [
    (
        "a plain prompt",
        "sys",
        [{"role": "user", "content": "hi"}],
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
    ),
    (
        "system blocks with breakpoints are joined, breakpoints dropped",
        [text("one", **CC), text("two")],
        [{"role": "user", "content": [text("hi", **CC)]}],
        [{"role": "system", "content": "one\n\ntwo"}, {"role": "user", "content": "hi"}],
    ),
    (
        "a tool batch and its answers, then a note and a prompt in the same user message",
        "",
        [
            {"role": "user", "content": [text("look")]},
            {
                "role": "assistant",
                "content": [text("Looking."), use("t1", path="a.py"), use("t2", "list_files")],
            },
            {
                "role": "user",
                "content": [
                    result("t1", "print(1)"),
                    result("t2", [text("a.py"), {"type": "image", "source": {}}], is_error=True),
                    text("[restored to an earlier checkpoint]"),
                    text("go on"),
                ],
            },
        ],
        [
            {"role": "user", "content": "look"},
            {
                "role": "assistant",
                "content": "Looking.",
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    },
                    {"id": "t2", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "print(1)"},
            {
                "role": "tool",
                "tool_call_id": "t2",
                "content": "Error: a.py\n[image not sent: this endpoint is sent text only]",
            },
            {"role": "user", "content": "[restored to an earlier checkpoint]\n\ngo on"},
        ],
    ),
    (
        "an assistant message of tool calls only has null content; thinking is not sent",
        "s",
        [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm"}, use("t9", "list_files")],
            },
            {"role": "user", "content": [result("t9", "")]},
        ],
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "t9", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "t9", "content": "(no output)"},
        ],
    ),
    (
        "non-ASCII tool input stays readable JSON",
        "s",
        [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [use("u1", "write_file", path="é.txt", content="日本")]},
            {"role": "user", "content": [result("u1", "ok")]},
        ],
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "u1",
                        "type": "function",
                        "function": {
                            "name": "write_file",
                            "arguments": '{"path": "é.txt", "content": "日本"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "u1", "content": "ok"},
        ],
    ),
]


@pytest.mark.parametrize(
    ("system", "messages", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_request_mapping(system: Any, messages: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert chat_messages(system, messages) == expected
    validate_chat({"model": "m", "messages": expected})


def test_tools_become_functions_without_breakpoints() -> None:
    tools = [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {}},
            **CC,
        },
        {"name": "mcp__srv__x", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}},
    ]
    assert [chat_tool(t) for t in tools] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "mcp__srv__x",
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        },
    ]


def test_body_streams_with_usage_and_carries_no_anthropic_field() -> None:
    tools = [{"name": "list_files", "description": "d", "input_schema": {"type": "object"}, **CC}]
    req = request([{"role": "user", "content": [text("hi", **CC)]}], system=[text("sys", **CC)], tools=tools)
    streamed = chat_body(req, stream=True)
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
    assert streamed["model"] == "qwen-test" and streamed["max_tokens"] == 512
    assert "cache_control" not in json.dumps(streamed)
    validate_chat(streamed)
    whole = chat_body(req, stream=False)
    assert "stream" not in whole and "stream_options" not in whole
    validate_chat(whole)


def test_a_restored_conversation_cut_after_a_tool_batch_maps_to_a_valid_request() -> None:
    """History cut right after a tool batch (restore 'conversation' to a tool checkpoint), then
    the restore note and a new prompt: every tool call is answered before the next message."""
    history = [
        {"role": "user", "content": [text("fix it")]},
        {
            "role": "assistant",
            "content": [use("a1", "read_file", path="x"), use("a2", "run_command", command="ls")],
        },
        {"role": "user", "content": [result("a1", "x"), result("a2", "cancelled", is_error=True)]},
        {
            "role": "assistant",
            "content": [text("Now writing."), use("b1", "write_file", path="x", content="y")],
        },
        {
            "role": "user",
            "content": [result("b1", "written"), text("(conversation restored here)"), text("again")],
        },
    ]
    body = chat_body(request(history), stream=True)
    validate_chat(body)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "user"]


# --------------------------------------------------------------------------- reply


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    }
    if usage is not None:
        out["usage"] = usage
    return out


def call(index: Any, cid: str | None = None, name: str | None = None, args: Any = None) -> dict[str, Any]:
    piece: dict[str, Any] = {"index": index}
    if cid is not None:
        piece["id"] = cid
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    piece["function"] = function
    return {"tool_calls": [piece]}


def assemble(chunks: list[dict[str, Any]], taken: set[str] | None = None) -> tuple[str, Any]:
    assembler = ReplyAssembler(taken=set(taken or ()))
    streamed = "".join(assembler.add(c) for c in chunks)
    return streamed, assembler.reply()


USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 100}}


def test_text_streams_in_order_and_usage_counts_cached_prompt_as_reads() -> None:
    streamed, reply = assemble(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            chunk(None, usage=USAGE),
        ]
    )
    assert streamed == "Hello"
    assert reply.blocks == [{"type": "text", "text": "Hello"}]
    assert reply.stop_reason == "end_turn"
    assert reply.usage == ReplyUsage(input_tokens=20, output_tokens=7, cache_read_input_tokens=100)


def test_tool_calls_accumulate_by_index_even_interleaved() -> None:
    _, reply = assemble(
        [
            chunk(call(0, "call_a", "read_file", "")),
            chunk(call(1, "call_b", "list_files", "")),
            chunk(call(0, args='{"pa')),
            chunk(call(1, args="{}")),
            chunk(call(0, args='th": "a.py"}')),
            chunk({}, "tool_calls"),
        ]
    )
    assert reply.blocks == [use("call_a", path="a.py"), use("call_b", "list_files")]
    assert reply.stop_reason == "tool_use"
    assert reply.usage.reported is False


FINISH_CASES = [
    ("stop", False, "end_turn"),
    ("stop", True, "tool_use"),  # a local server that says 'stop' after tool calls
    ("tool_calls", True, "tool_use"),
    ("tool_calls", False, "end_turn"),  # nothing to run: the turn ends
    ("function_call", True, "tool_use"),
    ("length", True, "max_tokens"),
    ("length", False, "max_tokens"),
    ("content_filter", False, "refusal"),
    ("content_filter", True, "refusal"),
    ("eos_token", False, "end_turn"),  # a server's own name for stop
]


@pytest.mark.parametrize(("finish", "with_call", "stop"), FINISH_CASES)
def test_finish_reasons(finish: str, with_call: bool, stop: str) -> None:
    chunks = [chunk({"content": "x"})]
    if with_call:
        chunks.append(chunk(call(0, "c1", "list_files", "{}")))
    _, reply = assemble([*chunks, chunk({}, finish)])
    assert reply.stop_reason == stop
    assert [b["type"] for b in reply.blocks] == ["text", *(["tool_use"] if with_call else [])]


def test_a_refusal_delta_is_text_and_a_refusal() -> None:
    streamed, reply = assemble([chunk({"refusal": "I can't help with that."}), chunk({}, "stop")])
    assert streamed == "I can't help with that."
    assert reply.stop_reason == "refusal"


@pytest.mark.parametrize(
    "chunks",
    [
        [],
        [chunk({"content": "partial"})],
        [chunk({"content": "partial"}), chunk(call(0, "c1", "write_file", '{"path": "a"}'))],
        [chunk(None, usage=USAGE)],
    ],
    ids=["nothing", "text-only", "mid-tool-call", "usage-only"],
)
def test_a_stream_without_finish_reason_ended_early(chunks: list[dict[str, Any]]) -> None:
    with pytest.raises(ModelError, match="ended early") as caught:
        assemble(chunks)
    assert not caught.value.retryable


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('{"path": "x", ]]', "not JSON"),
        ('{"path": "x"', "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('"just a string"', "not a JSON object"),
        ("null", "not a JSON object"),
    ],
)
def test_unreadable_arguments_fail_the_whole_reply(args: str, message: str) -> None:
    chunks = [
        chunk({"content": "ok"}),
        chunk(call(0, "c1", "list_files", "{}")),
        chunk(call(1, "c2", "write_file", args)),
    ]
    with pytest.raises(ModelError, match=message):
        assemble([*chunks, chunk({}, "tool_calls")])


def test_a_tool_call_without_a_name_fails() -> None:
    with pytest.raises(ModelError, match="without a name"):
        assemble([chunk(call(0, "c1", None, "{}")), chunk({}, "tool_calls")])


@pytest.mark.parametrize("args", ["", "  ", {"path": "a"}])
def test_empty_or_object_arguments_are_accepted(args: Any) -> None:
    _, reply = assemble([chunk(call(0, "c1", "list_files", args)), chunk({}, "tool_calls")])
    assert reply.blocks[0]["input"] == ({} if isinstance(args, str) else args)


def test_ids_that_are_missing_repeated_taken_or_malformed_are_replaced() -> None:
    chunks = [
        chunk(call(0, None, "a", "{}")),
        chunk(call(1, "dup", "b", "{}")),
        chunk(call(2, "dup", "c", "{}")),
        chunk(call(3, "old_1", "d", "{}")),
        chunk(call(4, "has space/slash", "e", "{}")),
        chunk(call(5, "x" * 65, "f", "{}")),
        chunk(call(6, "fine-id_7", "g", "{}")),
        chunk({}, "tool_calls"),
    ]
    _, reply = assemble(chunks, taken={"old_1"})
    ids = [b["id"] for b in reply.blocks]
    assert len(set(ids)) == len(ids) == 7
    assert ids[1] == "dup" and ids[6] == "fine-id_7"
    assert all(i.startswith("call_") for k, i in enumerate(ids) if k not in (1, 6))
    assert "old_1" not in ids


def test_a_server_that_sends_every_call_whole_at_index_0_still_gets_them_apart() -> None:
    _, reply = assemble(
        [
            chunk(call(0, "c1", "read_file", '{"path": "a"}')),
            chunk(call(0, "c2", "list_files", "{}")),
            chunk(call(0, "c3", "read_file", '{"path": ')),
            chunk(call(0, None, None, '"b"}')),
            chunk({}, "tool_calls"),
        ]
    )
    assert reply.blocks == [use("c1", path="a"), use("c2", "list_files"), use("c3", path="b")]


def test_a_server_that_numbers_no_call_still_gets_them_apart() -> None:
    _, reply = assemble(
        [
            chunk(call(None, "c1", "read_file", '{"path": ')),
            chunk(call(None, None, None, '"a"}')),
            chunk(call(None, "c2", "list_files", "{}")),
            chunk({}, "tool_calls"),
        ]
    )
    assert reply.blocks == [use("c1", path="a"), use("c2", "list_files")]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, ReplyUsage(reported=False)),
        ({"prompt_tokens": 5}, ReplyUsage(reported=False)),
        ({"prompt_tokens": 5, "completion_tokens": 2}, ReplyUsage(input_tokens=5, output_tokens=2)),
        (
            {"prompt_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 9}},
            ReplyUsage(input_tokens=5, output_tokens=2),  # more cached than sent: not believed
        ),
        (
            {"prompt_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": None},
            ReplyUsage(input_tokens=5, output_tokens=2),
        ),
    ],
)
def test_usage_mapping(usage: Any, expected: ReplyUsage) -> None:
    assert usage_of(usage) == expected


def test_sdk_chunk_objects_assemble_like_plain_json() -> None:
    raw = [
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, **c["choices"][0]}],
        }
        for c in [
            chunk({"content": "Hi"}),
            chunk(call(0, "call_1", "list_files", "{}")),
            chunk({}, "tool_calls"),
        ]
    ]
    raw.append(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [],
            "usage": {**USAGE, "total_tokens": 127},
        }
    )
    streamed, reply = assemble([ChatCompletionChunk.model_validate(r) for r in raw])  # type: ignore[misc]
    assert streamed == "Hi"
    assert reply.blocks == [text("Hi"), use("call_1", "list_files")]
    assert reply.usage.cache_read_input_tokens == 100


def test_a_whole_completion() -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Reading.",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": '{"path": "a"}'},
                            },
                            {
                                "id": "c2",
                                "type": "function",
                                "function": {"name": "list_files", "arguments": "{}"},
                            },
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
    )
    reply = reply_of_completion(completion)
    assert reply.blocks == [text("Reading."), use("c1", path="a"), use("c2", "list_files")]
    assert reply.stop_reason == "tool_use"
    assert reply.usage == ReplyUsage(input_tokens=10, output_tokens=3)
    with pytest.raises(ModelError, match="no choice"):
        reply_of_completion({"choices": []})
