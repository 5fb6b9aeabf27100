"""``vscode-lm``: the agent's model requests answered by VS Code's Language Model API (``vscode.lm``).

The server has no credentials for this provider: the request travels to the extension over the
JSON-RPC connection (:class:`~retrace.agent.model.providers.EditorModels`), which hands it to
``vscode.lm`` (a GitHub Copilot subscription's models, or any other vendor's) and streams the text
back. This module owns both wire forms, so the TypeScript side only forwards: the **bridge
request** maps one to one onto ``vscode.lm``'s classes::

    {model: {vendor, id}, maxTokens,
     messages: [{role: "user" | "assistant",
                 parts: [{kind: "text", text}
                         | {kind: "toolCall", callId, name, input}
                         | {kind: "toolResult", callId, content: [text, ...]}]}],
     tools: [{name, description, inputSchema}]}

and the **answer** is ``{parts: [text | toolCall parts], stopReason?, error?: {code, message}}``.

Mapping rules (the table tests in ``tests/agent/model/test_vscode_lm.py`` hold them):

* The stable API has no system role: the system prompt becomes the FIRST text part of the first
  user message (a message of its own would put two user messages in a row, which some vendors'
  backends refuse). Cache breakpoints are never sent (:attr:`VscodeLmClient.caching` is false).
* ``text`` → text part; ``tool_use`` → tool call part; ``tool_result`` → tool result part whose
  content is its text pieces (an error result is marked with a leading ``(tool error)`` line: the
  API has no error flag; an image is replaced by a note: the bridge carries text only). Other
  blocks carry nothing the API can take and are left out; a message left empty is dropped.
* Back: the text parts become one ``text`` block, each tool call a ``tool_use`` block (an input
  that is not an object becomes ``{}``, as the Anthropic family does; a missing or repeated call
  id gets a fresh one). The stop reason is ``tool_use`` when there are tool calls, else the
  answer's own when it is one the agent knows, else ``end_turn``.
* Usage is not reported (``reported=False``: the editor counts no tokens for us) and the price is
  unknown (:meth:`VscodeLmClient.cost_usd` is ``None``).
* The editor's failures (:func:`editor_error`) become :class:`ModelError` lines saying what to do;
  only transient ones (rate limits, network, a busy service) are retryable.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from retrace.agent.model.interface import (
    STOP_REASONS,
    EditorModels,
    ModelError,
    ModelReply,
    ModelRequest,
    ReplyUsage,
    TextSink,
)

PROVIDER = "vscode-lm"
TOOL_ERROR_MARK = "(tool error)"
"""First line of a failed tool's result (the API has no error flag on a tool result)."""
IMAGE_NOTE = "(an image was left out: the editor's models are sent text only)"
CHOOSE = "run 'Retrace: Choose Language Model'"


# --------------------------------------------------------------------------- request


def _text_of(content: Any) -> list[str]:
    """A tool result's content as text pieces (a string, or a list of content blocks)."""
    if isinstance(content, str):
        return [content]
    pieces: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif block.get("type") == "image":
            pieces.append(IMAGE_NOTE)
    return pieces


def _part(block: dict[str, Any]) -> dict[str, Any] | None:
    """One Messages-API block as a bridge part (``None``: nothing the API can carry)."""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"kind": "text", "text": text} if isinstance(text, str) and text else None
    if kind == "tool_use":
        tool_input = block.get("input")
        return {
            "kind": "toolCall",
            "callId": str(block.get("id", "")),
            "name": str(block.get("name", "")),
            "input": tool_input if isinstance(tool_input, dict) else {},
        }
    if kind == "tool_result":
        pieces = [p for p in _text_of(block.get("content")) if p] or ["(no output)"]
        if block.get("is_error"):
            pieces = [TOOL_ERROR_MARK, *pieces]
        return {"kind": "toolResult", "callId": str(block.get("tool_use_id", "")), "content": pieces}
    return None


def _system_text(system: str | list[dict[str, Any]]) -> str:
    if isinstance(system, str):
        return system
    return "\n\n".join(str(b["text"]) for b in system if b.get("type") == "text" and b.get("text"))


def bridge_messages(
    system: str | list[dict[str, Any]], messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The conversation as bridge messages, the system prompt first (see the module's rules)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        parts = [p for p in (_part(b) for b in blocks if isinstance(b, dict)) if p is not None]
        if parts:
            out.append({"role": role, "parts": parts})
    system_text = _system_text(system)
    if system_text:
        system_part = {"kind": "text", "text": system_text}
        if out and out[0]["role"] == "user":
            out[0] = {"role": "user", "parts": [system_part, *out[0]["parts"]]}
        else:
            out.insert(0, {"role": "user", "parts": [system_part]})
    return out


def bridge_request(request: ModelRequest, vendor: str) -> dict[str, Any]:
    """The bridge request for ``request`` (``request.model`` empty: the vendor's first model)."""
    return {
        "model": {"vendor": vendor, "id": request.model},
        "maxTokens": request.max_tokens,
        "messages": bridge_messages(request.system, request.messages),
        "tools": [
            {
                "name": str(tool["name"]),
                "description": str(tool.get("description", "")),
                "inputSchema": tool.get("input_schema") or {"type": "object", "properties": {}},
            }
            for tool in request.tools
        ],
    }


# --------------------------------------------------------------------------- answer


def reply_of(answer: dict[str, Any]) -> ModelReply:
    """The agent's reply for the bridge's answer (an ``error`` in it raises :class:`ModelError`)."""
    error = answer.get("error")
    if isinstance(error, dict):
        raise editor_error(str(error.get("code", "")), str(error.get("message", "")))
    parts = answer.get("parts")
    if not isinstance(parts, list):
        raise ModelError("the editor's model answer could not be read (no parts); nothing was kept")
    text = "".join(p["text"] for p in parts if _is(p, "text") and isinstance(p.get("text"), str))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += _tool_uses([p for p in parts if _is(p, "toolCall")])
    stop = answer.get("stopReason")
    if any(b["type"] == "tool_use" for b in blocks):
        stop_reason = "tool_use"
    elif isinstance(stop, str) and stop in STOP_REASONS and stop != "tool_use":
        stop_reason = stop
    else:
        stop_reason = "end_turn"
    return ModelReply(blocks=blocks, stop_reason=stop_reason, usage=ReplyUsage(reported=False))


def _is(part: Any, kind: str) -> bool:
    return isinstance(part, dict) and part.get("kind") == kind


def _tool_uses(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tool_use`` blocks for the answer's tool calls (a missing or repeated id: a fresh one)."""
    blocks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in calls:
        call_id = call.get("callId")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"vscodelm_{uuid.uuid4().hex[:20]}"
        seen.add(call_id)
        tool_input = call.get("input")
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id,
                "name": str(call.get("name", "")),
                "input": tool_input if isinstance(tool_input, dict) else {},
            }
        )
    return blocks


_TRANSIENT = re.compile(
    r"rate.?limit|too many requests|\b429\b|\b50[0234]\b|overloaded|temporar|timed? ?out|timeout|"
    r"network|econn|enotfound|socket|fetch failed|try again",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"quota|premium requests?|monthly limit|usage limit", re.IGNORECASE)
_TOO_LONG = re.compile(r"(token|context|prompt|input).{0,60}(exceed|too long|limit)", re.IGNORECASE)


def editor_error(code: str, message: str) -> ModelError:
    """The one line for a failure the editor reported: ``code`` is ``vscode.LanguageModelError``'s
    (``NoPermissions``, ``Blocked``, ``NotFound``), or the extension's own (``NoModel``: nothing
    matched the vendor and id; ``Cancelled``; ``Failed``: anything else, with its message)."""
    said = (message.strip().splitlines() or [""])[0][:200]
    detail = f"{code}: {message}" if message else code
    if code in ("NoModel", "NotFound"):
        return ModelError(
            f"no VS Code language model matches retrace.model ({said or code}): sign in to the vendor's "
            f"extension (GitHub Copilot for 'copilot'), or {CHOOSE}",
            detail=detail,
        )
    if code == "NoPermissions":
        return ModelError(
            "VS Code did not allow Retrace to use this language model (the access prompt was declined): "
            "send the prompt again and allow it, or choose another retrace.model.provider",
            detail=detail,
        )
    if code == "Blocked" or _QUOTA.search(said):
        return ModelError(
            f"the language model's vendor refused the request ({said or 'blocked'}): your plan's limit "
            "may be reached; try later or choose another model",
            detail=detail,
        )
    if _TOO_LONG.search(said):
        return ModelError(
            f"the conversation is longer than this model takes ({said}): compact it, restore an earlier "
            "checkpoint's conversation, or choose a model with a larger window",
            detail=detail,
        )
    if code == "Cancelled":
        return ModelError("the language model request was cancelled in VS Code", detail=detail)
    return ModelError(
        f"the VS Code language model failed: {said or code or 'no reason given'}",
        retryable=bool(_TRANSIENT.search(said)),
        detail=detail,
    )


# --------------------------------------------------------------------------- client


class VscodeLmClient:
    """A :class:`~retrace.agent.model.interface.ModelClient` answered by the editor's models."""

    def __init__(self, editor: EditorModels, vendor: str) -> None:
        self._editor = editor
        self._vendor = vendor.strip() or "copilot"

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def caching(self) -> bool:
        return False

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        return None

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        try:
            answer = await self._editor.chat(bridge_request(request, self._vendor), on_text)
        except ModelError:
            raise
        except Exception as e:  # the connection's own failures: one line, never a crash
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise ModelError(f"the editor did not answer the model request: {first}", detail=str(e)) from e
        return reply_of(answer)

    async def complete(self, request: ModelRequest) -> ModelReply:
        async def ignore(_text: str) -> None:
            return None

        return await self.stream(request, ignore)
