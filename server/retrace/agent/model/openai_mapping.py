"""The agent's one conversation form ↔ OpenAI chat completions (pure: no SDK, no I/O; table-tested).

Request (:func:`chat_body`): the system prompt (a string or text blocks) becomes one ``system``
message; an assistant message's text becomes its ``content`` and each ``tool_use`` a
``tool_calls`` entry (``id`` = the tool_use id, ``function.arguments`` = the input as a JSON
string); a user message's ``tool_result`` blocks become ``role: tool`` messages (``tool_call_id``,
the result flattened to text, an error said in the text), in order and before the user message's
own text, so every assistant ``tool_calls`` is answered right after it as the API requires; tool
schemas ``{name, description, input_schema}`` become ``{"type": "function", "function": {name,
description, parameters}}``. Prompt-cache breakpoints (``cache_control``) are never sent: the
chat API has no such field (and rejects unknown ones). Blocks the chat form cannot carry (images,
documents) are replaced by a one-line note; ``thinking`` blocks are not sent.

Reply (:class:`ReplyAssembler`): streamed chunks (or a whole completion, :func:`reply_of_completion`)
are folded into a :class:`ModelReply`: text pieces in order; tool calls accumulated by ``index``
(a new ``id`` at a used index is a new call), their ``arguments`` concatenated and parsed at the
end (arguments that are not a JSON object fail the whole reply: nothing partial is kept);
``finish_reason`` mapped to the agent's stop reasons (``stop`` → ``end_turn``, ``tool_calls`` →
``tool_use``, ``length`` → ``max_tokens``, ``content_filter`` → ``refusal``; a reply with tool
calls that ends with ``stop``, as some local servers answer, is ``tool_use``); a stream with no
``finish_reason`` ended early (an error).
Usage: ``prompt_tokens`` (``prompt_tokens_details.cached_tokens`` as cache reads) and
``completion_tokens``, else unreported. A tool call id that is missing, repeated, or not of the
form every provider accepts (``[A-Za-z0-9_-]{1,64}``) is replaced by a fresh ``call_`` id (the
history then carries that one), so the journal keeps ids unique and valid for any provider.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from retrace.agent.model.interface import ModelError, ModelReply, ModelRequest, ReplyUsage

_FINISH: dict[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
"""``finish_reason`` → the agent's stop reason (an unknown one is ``end_turn``, or ``tool_use``
with tool calls)."""
_GOOD_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ERROR_PREFIX = "Error: "
"""How a tool result marked ``is_error`` is said in the text of its ``tool`` message."""


# --------------------------------------------------------------------------- request


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _omitted(block: dict[str, Any]) -> str:
    return f"[{block.get('type', 'content')} not sent: this endpoint is sent text only]"


def system_text(system: str | list[dict[str, Any]]) -> str:
    """The system prompt as one string (text blocks joined by a blank line)."""
    if isinstance(system, str):
        return system
    return "\n\n".join(str(b.get("text", "")) for b in system if b.get("type") == "text")


def result_text(block: dict[str, Any]) -> str:
    """A ``tool_result`` block's content as the text of a ``tool`` message (an error said so)."""
    parts = [
        str(b.get("text", "")) if b.get("type") == "text" else _omitted(b)
        for b in _blocks(block.get("content"))
    ]
    text = "\n".join(parts) or "(no output)"
    return ERROR_PREFIX + text if block.get("is_error") else text


def _assistant(content: Any) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            texts.append(str(block["text"]))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            function = {"name": str(block.get("name", "")), "arguments": arguments}
            calls.append({"id": str(block.get("id", "")), "type": "function", "function": function})
    if not texts and not calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(content: Any) -> list[dict[str, Any]]:
    """Tool messages first (they answer the assistant message before), then the user's text."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "tool_result":
            out.append(
                {"role": "tool", "tool_call_id": block.get("tool_use_id", ""), "content": result_text(block)}
            )
        elif kind == "text":
            if block.get("text"):
                texts.append(str(block["text"]))
        else:
            texts.append(_omitted(block))
    if texts:
        out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def chat_messages(system: str | list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for a system prompt and Messages-API ``messages``."""
    out: list[dict[str, Any]] = []
    text = system_text(system)
    if text:
        out.append({"role": "system", "content": text})
    for message in messages:
        if message.get("role") == "assistant":
            assistant = _assistant(message.get("content"))
            if assistant is not None:
                out.append(assistant)
        else:
            out.extend(_user(message.get("content")))
    return out


def chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A Messages-API tool schema as a chat-completions function tool (no ``cache_control``)."""
    function: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def chat_body(request: ModelRequest, *, stream: bool, limit: str = "max_tokens") -> dict[str, Any]:
    """The chat-completions request body for ``request`` (streaming: usage asked for at the end).
    ``limit``: the name of the output limit (``max_tokens``, which every compatible server knows,
    or ``max_completion_tokens``, which OpenAI's newer models require instead)."""
    body: dict[str, Any] = {
        "model": request.model,
        limit: request.max_tokens,
        "messages": chat_messages(request.system, request.messages),
    }
    if request.tools:
        body["tools"] = [chat_tool(t) for t in request.tools]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def tool_use_ids(messages: list[dict[str, Any]]) -> set[str]:
    """The tool_use ids a conversation already holds (a reply's ids must not repeat them)."""
    return {
        str(b.get("id"))
        for m in messages
        if m.get("role") == "assistant"
        for b in _blocks(m.get("content"))
        if b.get("type") == "tool_use"
    }


# --------------------------------------------------------------------------- reply


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a dict or ``obj.name`` of an SDK object (``None`` when absent)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def usage_of(usage: Any) -> ReplyUsage:
    """A chat ``usage`` as the agent's (cached prompt tokens are cache reads)."""
    prompt = _field(usage, "prompt_tokens")
    completion = _field(usage, "completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return ReplyUsage(reported=False)
    cached = _field(_field(usage, "prompt_tokens_details"), "cached_tokens")
    cached = cached if isinstance(cached, int) and 0 < cached <= prompt else 0
    return ReplyUsage(input_tokens=prompt - cached, output_tokens=completion, cache_read_input_tokens=cached)


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class ReplyAssembler:
    """Folds chat-completion chunks into one :class:`ModelReply`. ``taken``: tool_use ids the
    conversation already holds."""

    taken: set[str] = field(default_factory=set)
    text: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    """The tool calls in the order they began."""
    by_index: dict[int, int] = field(default_factory=dict)
    """The endpoint's ``index`` of a call → its place in :attr:`calls`."""
    finish: str | None = None
    refused: bool = False
    usage: ReplyUsage = field(default_factory=lambda: ReplyUsage(reported=False))

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its text (for the stream's text sink; ``""`` if none)."""
        if _field(chunk, "usage") is not None:
            self.usage = usage_of(_field(chunk, "usage"))
        pieces: list[str] = []
        for choice in (_field(chunk, "choices") or [])[:1]:  # one choice asked for (n = 1)
            delta = _field(choice, "delta") or {}
            for name in ("content", "refusal"):
                piece = _field(delta, name)
                if isinstance(piece, str) and piece:
                    pieces.append(piece)
                    self.refused = self.refused or name == "refusal"
            for call in _field(delta, "tool_calls") or []:
                self._add_call(call)
            if isinstance(_field(choice, "finish_reason"), str):
                self.finish = _field(choice, "finish_reason")
        self.text.extend(pieces)
        return "".join(pieces)

    def _slot(self, call: Any) -> _Call:
        """The call a ``tool_calls`` delta continues, or a new one: by ``index``; a new ``id`` at
        an index already used is a new call (a server that sends each call whole at index 0); a
        server that numbers nothing continues the call with that id, else the last one."""
        index = _field(call, "index")
        call_id = _field(call, "id") if isinstance(_field(call, "id"), str) else ""
        if isinstance(index, int) and index in self.by_index:
            slot = self.calls[self.by_index[index]]
            if not (call_id and slot.id and call_id != slot.id):
                return slot
        elif not isinstance(index, int):
            known = [c for c in self.calls if call_id and c.id == call_id]
            if known or (self.calls and not call_id):
                return known[0] if known else self.calls[-1]
        self.calls.append(_Call())
        if isinstance(index, int):
            self.by_index[index] = len(self.calls) - 1
        return self.calls[-1]

    def _add_call(self, call: Any) -> None:
        slot = self._slot(call)
        call_id = _field(call, "id")
        if isinstance(call_id, str) and call_id and not slot.id:
            slot.id = call_id
        function = _field(call, "function") or {}
        name = _field(function, "name")
        if isinstance(name, str) and name and name != slot.name:
            slot.name += name
        arguments = _field(function, "arguments")
        if isinstance(arguments, dict):  # a server that sends the object itself
            arguments = json.dumps(arguments)
        if isinstance(arguments, str):
            slot.arguments.append(arguments)

    def _tool_block(self, call: _Call) -> dict[str, Any]:
        if not call.name:
            raise ModelError("the model's reply held a tool call without a name; nothing was kept")
        raw = "".join(call.arguments).strip() or "{}"
        try:
            tool_input = json.loads(raw)
        except ValueError as e:
            raise ModelError(
                f"the model's call of {call.name} had arguments that are not JSON ({e}); nothing was kept",
                detail=raw[:2000],
            ) from e
        if not isinstance(tool_input, dict):
            raise ModelError(f"the model's call of {call.name} had arguments that are not a JSON object")
        call_id = call.id
        if not _GOOD_ID.match(call_id) or call_id in self.taken:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        self.taken.add(call_id)
        return {"type": "tool_use", "id": call_id, "name": call.name, "input": tool_input}

    def reply(self) -> ModelReply:
        """The whole reply; :class:`ModelError` if it ended early or a tool call is unreadable."""
        if self.finish is None:
            raise ModelError("the model's reply stream ended early (no finish reason); nothing was kept")
        blocks: list[dict[str, Any]] = []
        text = "".join(self.text)
        if text:
            blocks.append({"type": "text", "text": text})
        blocks.extend(self._tool_block(call) for call in self.calls)
        stop = "refusal" if self.refused else _FINISH.get(self.finish, "end_turn")
        has_calls = bool(self.calls)
        if stop == "end_turn" and has_calls:
            stop = "tool_use"
        elif stop == "tool_use" and not has_calls:
            stop = "end_turn"
        return ModelReply(blocks=blocks, stop_reason=stop, usage=self.usage)


def reply_of_completion(completion: Any, taken: set[str] | None = None) -> ModelReply:
    """A whole (non-streamed) chat completion as the agent's reply."""
    choices = _field(completion, "choices") or []
    if not choices:
        raise ModelError("the model's reply held no choice; nothing was kept")
    message = _field(choices[0], "message") or {}
    calls = [
        {"index": i, "id": _field(c, "id"), "function": _field(c, "function")}
        for i, c in enumerate(_field(message, "tool_calls") or [])
    ]
    assembler = ReplyAssembler(taken=set(taken or ()))
    delta = {
        "content": _field(message, "content"),
        "refusal": _field(message, "refusal"),
        "tool_calls": calls,
    }
    assembler.add(
        {
            "choices": [{"delta": delta, "finish_reason": _field(choices[0], "finish_reason")}],
            "usage": _field(completion, "usage"),
        }
    )
    return assembler.reply()
