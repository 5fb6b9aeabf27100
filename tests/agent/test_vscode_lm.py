"""The ``vscode-lm`` mapping, both ways (:mod:`retrace.agent.model.vscode_lm`): the agent's
Messages-API form to the bridge request ``vscode.lm`` takes, the bridge's answer back to a reply,
the editor's failures to one line each; every request validated against the wire model the
extension is generated from (``ModelChatParams``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from retrace.agent.model.interface import ModelError, ModelRequest
from retrace.agent.model.providers import NO_EDITOR, UnavailableClient, make_client
from retrace.agent.model.settings import ModelSettings
from retrace.agent.model.vscode_lm import (
    IMAGE_NOTE,
    TOOL_ERROR_MARK,
    VscodeLmClient,
    bridge_messages,
    bridge_request,
    editor_error,
    reply_of,
)
from retrace.protocol.model_bridge import ModelChatParams

SYSTEM = "You are Retrace's agent."


def text(t: str) -> dict[str, Any]:
    return {"kind": "text", "text": t}


@pytest.mark.parametrize(
    ("system", "messages", "expected"),
    [
        pytest.param(
            SYSTEM,
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            [{"role": "user", "parts": [text(SYSTEM), text("hi")]}],
            id="system-first-in-first-user-message",
        ),
        pytest.param(
            [
                {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "b"},
            ],
            [{"role": "user", "content": "plain string prompt"}],
            [{"role": "user", "parts": [text("a\n\nb"), text("plain string prompt")]}],
            id="system-blocks-joined-cache-marks-dropped",
        ),
        pytest.param(
            "",
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            [{"role": "user", "parts": [text("hi")]}],
            id="no-system",
        ),
        pytest.param(
            SYSTEM,
            [
                {"role": "user", "content": [{"type": "text", "text": "edit it"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "I'll edit."},
                        {"type": "tool_use", "id": "call_1", "name": "write_file", "input": {"path": "a.py"}},
                        {
                            "type": "tool_use",
                            "id": "call_2",
                            "name": "run_command",
                            "input": {"command": "ls"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "wrote a.py"},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "boom", "is_error": True},
                        {"type": "text", "text": "and then?"},
                    ],
                },
            ],
            [
                {"role": "user", "parts": [text(SYSTEM), text("edit it")]},
                {
                    "role": "assistant",
                    "parts": [
                        text("I'll edit."),
                        {
                            "kind": "toolCall",
                            "callId": "call_1",
                            "name": "write_file",
                            "input": {"path": "a.py"},
                        },
                        {
                            "kind": "toolCall",
                            "callId": "call_2",
                            "name": "run_command",
                            "input": {"command": "ls"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {"kind": "toolResult", "callId": "call_1", "content": ["wrote a.py"]},
                        {"kind": "toolResult", "callId": "call_2", "content": [TOOL_ERROR_MARK, "boom"]},
                        text("and then?"),
                    ],
                },
            ],
            id="tool-round-trip-error-marked",
        ),
        pytest.param(
            "",
            [
                {"role": "user", "content": [{"type": "text", "text": "look"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "shot", "input": "x"}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": [
                                {"type": "text", "text": "caption"},
                                {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                            ],
                        }
                    ],
                },
            ],
            [
                {"role": "user", "parts": [text("look")]},
                {
                    "role": "assistant",
                    "parts": [{"kind": "toolCall", "callId": "t", "name": "shot", "input": {}}],
                },
                {
                    "role": "user",
                    "parts": [{"kind": "toolResult", "callId": "t", "content": ["caption", IMAGE_NOTE]}],
                },
            ],
            id="block-content-image-noted-non-object-input",
        ),
        pytest.param(
            "",
            [
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": ""}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": ""}]},
            ],
            [
                {"role": "user", "parts": [text("q")]},
                {
                    "role": "user",
                    "parts": [{"kind": "toolResult", "callId": "x", "content": ["(no output)"]}],
                },
            ],
            id="unknown-and-empty-blocks-left-out-empty-message-dropped",
        ),
        pytest.param(
            SYSTEM,
            [{"role": "assistant", "content": [{"type": "text", "text": "odd start"}]}],
            [{"role": "user", "parts": [text(SYSTEM)]}, {"role": "assistant", "parts": [text("odd start")]}],
            id="system-own-message-when-history-starts-with-assistant",
        ),
    ],
)
def test_request_mapping(system: Any, messages: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert bridge_messages(system, messages) == expected
    request = ModelRequest(model="", max_tokens=100, system=system, messages=messages)
    ModelChatParams.model_validate({**bridge_request(request, "copilot"), "requestId": "r1"})


def test_restored_conversation_maps_to_a_valid_request() -> None:
    """A conversation restored to a checkpoint: a restore note before the prompt, an unanswered
    call answered 'not run' (as ``api_messages`` repairs it); every tool result names a call of the
    assistant message right before it."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "make a.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "write_file", "input": {"path": "a.py"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": "not run: stopped",
                    "is_error": True,
                },
                {"type": "text", "text": "[The conversation was restored to checkpoint 3.]"},
                {"type": "text", "text": "now b.py"},
            ],
        },
    ]
    tools = [{"name": "write_file", "description": "Write", "input_schema": {"type": "object"}}]
    request = ModelRequest(model="gpt-4.1", max_tokens=50, system=SYSTEM, messages=messages, tools=tools)
    bridged = bridge_request(request, "copilot")
    params = ModelChatParams.model_validate({**bridged, "requestId": "r"})
    assert params.model.id == "gpt-4.1" and params.tools[0].input_schema == {"type": "object"}
    calls: set[str] = set()
    for message in bridged["messages"]:
        for part in message["parts"]:
            if part["kind"] == "toolResult":
                assert part["callId"] in calls, "a result names a call made before it"
        calls = {p["callId"] for p in message["parts"] if p["kind"] == "toolCall"}
    assert bridged["messages"][-1]["parts"][0]["content"] == [TOOL_ERROR_MARK, "not run: stopped"]


@pytest.mark.parametrize(
    ("answer", "blocks", "stop"),
    [
        ({"parts": [text("Hel"), text("lo")]}, [{"type": "text", "text": "Hello"}], "end_turn"),
        (
            {
                "parts": [
                    text("ok"),
                    {"kind": "toolCall", "callId": "c1", "name": "read_file", "input": {"path": "x"}},
                ]
            },
            [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "x"}},
            ],
            "tool_use",
        ),
        ({"parts": [], "stopReason": "max_tokens"}, [], "max_tokens"),
        ({"parts": [text("x")], "stopReason": "tool_use"}, [{"type": "text", "text": "x"}], "end_turn"),
        ({"parts": [text("x")], "stopReason": "whatever"}, [{"type": "text", "text": "x"}], "end_turn"),
        ({"parts": [text(""), {"kind": "mystery"}, "junk"]}, [], "end_turn"),
    ],
)
def test_answer_mapping(answer: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> None:
    reply = reply_of(answer)
    assert reply.blocks == blocks
    assert reply.stop_reason == stop
    assert reply.usage.reported is False


def test_answer_tool_call_ids_are_unique_and_present() -> None:
    calls = [
        {"kind": "toolCall", "callId": "same", "name": "a", "input": {}},
        {"kind": "toolCall", "callId": "same", "name": "b", "input": []},
        {"kind": "toolCall", "name": "c"},
    ]
    blocks = reply_of({"parts": calls}).blocks
    ids = [b["id"] for b in blocks]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids)
    assert [b["input"] for b in blocks] == [{}, {}, {}]


@pytest.mark.parametrize("answer", [{}, {"parts": "text"}, {"parts": None}])
def test_unreadable_answer_is_a_model_error(answer: dict[str, Any]) -> None:
    with pytest.raises(ModelError, match="could not be read"):
        reply_of(answer)


@pytest.mark.parametrize(
    ("code", "message", "says", "retryable"),
    [
        ("NoModel", "", "Choose Language Model", False),
        ("NotFound", "Language model 'x' is unknown.", "Choose Language Model", False),
        ("NoPermissions", "cannot be used", "allow it", False),
        ("Blocked", "", "limit", False),
        ("Failed", "You have exceeded your monthly quota", "limit", False),
        ("Cancelled", "", "cancelled", False),
        ("Failed", "Request failed: 429 Too Many Requests", "429", True),
        ("Failed", "fetch failed: ECONNRESET", "ECONNRESET", True),
        ("Failed", "Server error 503\nstack...", "503", True),
        ("Failed", "The model does not support tools", "does not support tools", False),
        ("Failed", "prompt token count of 130000 exceeds the limit of 128000", "longer than", False),
        ("Failed", "model_max_prompt_tokens_exceeded", "longer than this model takes", False),
        ("Failed", "You have reached your monthly limit of premium requests", "limit", False),
        ("", "", "no reason given", False),
    ],
)
def test_editor_errors(code: str, message: str, says: str, retryable: bool) -> None:
    error = editor_error(code, message)
    assert says in str(error)
    assert "\n" not in str(error)
    assert error.retryable is retryable
    with pytest.raises(ModelError) as raised:
        reply_of({"parts": [], "error": {"code": code, "message": message}})
    assert str(raised.value) == str(error)


class ScriptedEditor:
    def __init__(self, answer: dict[str, Any] | Exception, pieces: list[str]) -> None:
        self.answer = answer
        self.pieces = pieces
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: dict[str, Any], on_text: Any) -> dict[str, Any]:
        self.requests.append(request)
        for piece in self.pieces:
            await on_text(piece)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_client_streams_and_declares_what_it_lacks() -> None:
    editor = ScriptedEditor({"parts": [text("ab")]}, ["a", "b"])
    client = make_client(
        ModelSettings.model_validate({"provider": "vscode-lm", "vscodeLm": {"vendor": "acme"}}),
        anthropic=lambda: pytest.fail("not the Anthropic client"),
        editor_models=editor,
    )
    assert isinstance(client, VscodeLmClient)
    assert client.provider == "vscode-lm" and client.caching is False
    seen: list[str] = []

    async def sink(t: str) -> None:
        seen.append(t)

    request = ModelRequest(model="", max_tokens=10, system="", messages=[{"role": "user", "content": "q"}])
    reply = asyncio.run(client.stream(request, sink))
    assert seen == ["a", "b"] and reply.blocks == [{"type": "text", "text": "ab"}]
    assert editor.requests[0]["model"] == {"vendor": "acme", "id": ""}
    assert client.cost_usd("", reply.usage) is None
    assert asyncio.run(client.complete(request)).blocks == reply.blocks


def test_connection_failure_is_one_model_error() -> None:
    client = VscodeLmClient(ScriptedEditor(RuntimeError("connection lost\ntrace"), []), "copilot")
    request = ModelRequest(model="", max_tokens=10, system="", messages=[{"role": "user", "content": "q"}])
    with pytest.raises(ModelError, match=r"^the editor did not answer the model request: connection lost$"):
        asyncio.run(client.complete(request))


def test_no_editor_is_one_clear_error() -> None:
    client = make_client(
        ModelSettings(provider="vscode-lm"), anthropic=lambda: pytest.fail("no"), editor_models=None
    )
    assert isinstance(client, UnavailableClient)
    request = ModelRequest(model="", max_tokens=10, system="", messages=[])
    with pytest.raises(ModelError) as raised:
        asyncio.run(client.complete(request))
    assert str(raised.value) == NO_EDITOR and not raised.value.retryable
