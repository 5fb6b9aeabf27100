"""OpenAI chat completions on the fake model (``POST /v1/chat/completions``), answered from the
SAME scenario scripts as the Messages API.

The fake server (:mod:`retrace.offline.server`) routes a chat request here for three steps:
:func:`~retrace.offline.openai_validation.validate_chat` (a 400 in OpenAI's error shape,
:func:`chat_error_body`, when the real API would refuse it); :func:`script_view`, the request in the
Messages form the scenario matches on (lanes, the last user text, the last tool results; an
error result is one whose text starts with the client's error prefix); and :func:`answer_chat`, the
scripted reply (built as a Messages reply) sent in chat form: streamed as SSE ``data:`` lines —
a role chunk, ``content`` pieces, ``tool_calls`` pieces (the id, type and name first, then the
``arguments`` JSON in pieces, by ``index``), a chunk with the ``finish_reason``, a usage chunk
when ``stream_options.include_usage`` asks for it, then ``data: [DONE]`` — or as one
``chat.completion``. The scenario's stream faults apply here too: a truncated stream, a chunk
that is not JSON, tool ``arguments`` that are not JSON.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Protocol

from retrace.agent.model.openai_mapping import ERROR_PREFIX
from retrace.offline.scenario import ScriptedResponse

CHAT_PATH = "/v1/chat/completions"
CHAT_WIRE = "chat"
"""How :attr:`~retrace.offline.server.FakeModel.wires` names a request that came this way."""
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class StreamSink(Protocol):
    """The HTTP handler's streaming calls (chunked transfer encoding)."""

    def start_stream(self) -> None: ...
    def write_chunk(self, data: bytes) -> None: ...
    def end_stream(self) -> None: ...
    def abort_stream(self) -> None: ...
    def send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None: ...


def chat_error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error shape."""
    kind, code = _ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# --------------------------------------------------------------------------- request → script form


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if _text(message.get("content")):
        blocks.append({"type": "text", "text": _text(message.get("content"))})
    for call in message.get("tool_calls") or []:
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": function["name"],
                "input": json.loads(function["arguments"]),
            }
        )
    return blocks


def _user_block(message: dict[str, Any]) -> dict[str, Any]:
    if message["role"] != "tool":
        return {"type": "text", "text": _text(message.get("content"))}
    text = _text(message.get("content"))
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": text}
    if text.startswith(ERROR_PREFIX):
        block["is_error"] = True
    return block


def script_view(body: dict[str, Any]) -> dict[str, Any]:
    """A valid chat request in the Messages form the scenario matches on (system and developer
    messages become the system prompt; tool and user messages merge into user messages)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        role = message["role"]
        if role in ("system", "developer"):
            system.append(_text(message.get("content")))
            continue
        blocks = _assistant_blocks(message) if role == "assistant" else [_user_block(message)]
        side = "assistant" if role == "assistant" else "user"
        if messages and messages[-1]["role"] == side:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": side, "content": blocks})
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"].get("parameters") or {}}
        for t in body.get("tools") or []
    ]
    return {"model": body["model"], "system": "\n\n".join(system), "tools": tools, "messages": messages}


# --------------------------------------------------------------------------- script reply → chat


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    cached = int(usage.get("cache_read_input_tokens") or 0)
    prompt = int(usage["input_tokens"]) + int(usage.get("cache_creation_input_tokens") or 0) + cached
    output = int(usage["output_tokens"])
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply's tool calls in chat form (fresh ``call_`` ids, as OpenAI names them)."""
    return [
        {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
        }
        for b in message["content"]
        if b["type"] == "tool_use"
    ]


def _reply_text(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def completion(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A whole ``chat.completion`` for the scripted reply ``message`` (Messages form)."""
    reply: dict[str, Any] = {"role": "assistant", "content": _reply_text(message) or None, "refusal": None}
    calls = _calls(message)
    if calls:
        reply["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [
            {"index": 0, "message": reply, "finish_reason": _FINISH[message["stop_reason"]], "logprobs": None}
        ],
        "usage": _usage(message["usage"]),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _deltas(message: dict[str, Any], response: ScriptedResponse) -> list[dict[str, Any]]:
    """The deltas of the stream, in order (faults included: arguments that are not JSON)."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas.extend({"content": piece} for piece in _pieces(_reply_text(message), 12))
    for index, call in enumerate(_calls(message)):
        head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        deltas.append({"tool_calls": [{"index": index, **head}]})
        arguments = (
            '{"path": "x", ]]' if response.invalid_tool_json and index == 0 else call["function"]["arguments"]
        )
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in _pieces(arguments, 15)
        )
    return deltas


def answer_chat(
    handler: StreamSink, body: dict[str, Any], message: dict[str, Any], response: ScriptedResponse
) -> None:
    """Send the scripted reply ``message`` (Messages form) to a chat request ``body``."""
    if not body.get("stream"):
        handler.send_json(200, completion(body, message))
        return
    handler.start_stream()
    delay = response.chunk_delay_ms / 1000.0
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body["model"],
    }

    def send(data: dict[str, Any] | str) -> None:
        payload = data if isinstance(data, str) else json.dumps({**base, **data})
        handler.write_chunk(f"data: {payload}\n\n".encode())
        if delay:
            time.sleep(delay)

    broken = response.truncate_stream or response.malformed_event
    for i, delta in enumerate(_deltas(message, response)):
        send({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        if broken and i == 2:
            break
    if response.malformed_event:
        send("{this is not json")
    if broken:
        handler.abort_stream()
        return
    finish = _FINISH[message["stop_reason"]]
    send({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        send({"choices": [], "usage": _usage(message["usage"])})
    send("[DONE]")
    handler.end_stream()
