"""OpenAI chat completions' request rules, as the fake endpoint enforces them
(:mod:`retrace.offline.openai_wire`): an invalid request gets a 400 in OpenAI's error shape, so a
test that sends an invalid conversation fails as it would against a real endpoint.

Rules (those a conversation can break): only known top-level fields; ``model`` present;
``max_tokens`` / ``max_completion_tokens`` a positive integer; ``stream_options`` only with
``stream: true``; ``messages`` a non-empty list of objects with a known ``role`` and only that
role's fields (an Anthropic field such as ``cache_control`` is refused, as the real API refuses
unknown properties); ``content`` a string or a non-empty list of typed parts (``null`` only on
an assistant message with ``tool_calls``); ``tool_calls`` entries ``{id, type: "function",
function: {name, arguments}}`` with unique ids and ``arguments`` a string holding a JSON object;
every assistant ``tool_calls`` answered by ``role: tool`` messages with the matching
``tool_call_id``, each once, before any other message; no ``tool`` message answering nothing;
``tools`` entries ``{type: "function", function: {name, description?, parameters?}}`` with
valid, unique names and an object ``parameters`` schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from retrace.offline.validation import InvalidRequestError

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOP_LEVEL = frozenset(
    {
        "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options",
        "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "n", "seed", "user",
        "presence_penalty", "frequency_penalty", "response_format", "metadata", "store", "reasoning_effort",
    }
)  # fmt: skip
_MESSAGE_FIELDS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
    "tool": {"role", "content", "tool_call_id"},
}
_PART_TYPES = {
    "system": {"text"},
    "developer": {"text"},
    "user": {"text", "image_url", "input_audio", "file"},
    "assistant": {"text", "refusal"},
    "tool": {"text"},
}


def _positive_int(body: Mapping[str, Any], name: str) -> None:
    value = body.get(name)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise InvalidRequestError(f"Invalid value for '{name}': expected a positive integer.")


def validate_chat(body: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidRequestError` unless ``body`` is a request chat completions accepts."""
    unknown = sorted(set(body) - _TOP_LEVEL)
    if unknown:
        raise InvalidRequestError(f"Unrecognized request argument supplied: {unknown[0]}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("you must provide a model parameter")
    _positive_int(body, "max_tokens")
    _positive_int(body, "max_completion_tokens")
    if body.get("stream_options") is not None and body.get("stream") is not True:
        raise InvalidRequestError("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    if body.get("tools") is not None:
        validate_chat_tools(body["tools"])
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequestError("'messages' must be a non-empty array")
    validate_chat_messages(messages)


def validate_chat_tools(tools: object) -> None:
    if not isinstance(tools, list):
        raise InvalidRequestError("Invalid type for 'tools': expected an array")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if (
            not isinstance(tool, Mapping)
            or tool.get("type") != "function"
            or set(tool) - {"type", "function"}
        ):
            raise InvalidRequestError(f"Invalid value for '{where}': expected {{type: 'function', function}}")
        function = tool.get("function")
        if not isinstance(function, Mapping) or set(function) - {
            "name",
            "description",
            "parameters",
            "strict",
        }:
            raise InvalidRequestError(f"Invalid value for '{where}.function': unexpected or missing fields")
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidRequestError(f"Invalid '{where}.function.name': string does not match pattern.")
        if name in seen:
            raise InvalidRequestError(f"Invalid 'tools': duplicate function name {name!r}.")
        seen.add(name)
        if function.get("description") is not None and not isinstance(function["description"], str):
            raise InvalidRequestError(f"Invalid type for '{where}.function.description': expected a string")
        parameters = function.get("parameters")
        if parameters is not None and (
            not isinstance(parameters, Mapping) or parameters.get("type") != "object"
        ):
            raise InvalidRequestError(
                f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"'"
            )


def _check_content(message: Mapping[str, Any], role: str, where: str) -> None:
    content = message.get("content")
    if content is None:
        if role == "assistant" and message.get("tool_calls"):
            return
        raise InvalidRequestError(
            f"Invalid value for '{where}.content': expected a string or an array, got null."
        )
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise InvalidRequestError(f"Invalid '{where}.content': expected a string or a non-empty array.")
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in _PART_TYPES[role]:
            raise InvalidRequestError(
                f"Invalid value for '{where}.content[{j}].type': {kind!r} is not allowed here."
            )
        if kind == "text" and not isinstance(part.get("text"), str):
            raise InvalidRequestError(f"Missing required parameter: '{where}.content[{j}].text'.")


def _tool_call_ids(message: Mapping[str, Any], where: str, seen: set[str]) -> list[str]:
    """The ids an assistant message's ``tool_calls`` open (checked: shape, unique, JSON arguments)."""
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list) or not calls:
        raise InvalidRequestError(f"Invalid '{where}.tool_calls': expected a non-empty array.")
    ids: list[str] = []
    for k, call in enumerate(calls):
        at = f"{where}.tool_calls[{k}]"
        if (
            not isinstance(call, Mapping)
            or call.get("type") != "function"
            or set(call) - {"id", "type", "function"}
        ):
            raise InvalidRequestError(
                f"Invalid value for '{at}': expected {{id, type: 'function', function}}"
            )
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidRequestError(f"Missing required parameter: '{at}.id'.")
        if call_id in seen:
            raise InvalidRequestError(f"Invalid '{at}.id': duplicate tool call id {call_id!r}.")
        function = call.get("function")
        if (
            not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            raise InvalidRequestError(f"Missing required parameter: '{at}.function.name'.")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise InvalidRequestError(
                f"Invalid type for '{at}.function.arguments': expected a string, "
                f"but got {type(arguments).__name__}."
            )
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise InvalidRequestError(
                f"Invalid '{at}.function.arguments': not a JSON object: {arguments[:80]!r}"
            )
        seen.add(call_id)
        ids.append(call_id)
    return ids


def _unanswered(pending: list[str]) -> InvalidRequestError:
    return InvalidRequestError(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}"
    )


def validate_chat_messages(messages: Sequence[Any]) -> None:
    """Raise :class:`InvalidRequestError` unless ``messages`` is a valid chat conversation."""
    seen: set[str] = set()
    pending: list[str] = []  # tool call ids not answered yet
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, Mapping) else None
        if not isinstance(role, str) or role not in _MESSAGE_FIELDS:
            raise InvalidRequestError(f"Invalid value for '{where}.role': {role!r}.")
        extra = sorted(set(message) - _MESSAGE_FIELDS[role])
        if extra:
            raise InvalidRequestError(
                f"Additional properties are not allowed ('{extra[0]}' was unexpected) in '{where}'."
            )
        _check_content(message, role, where)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise InvalidRequestError(
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceding message "
                    f"with 'tool_calls' ({where}.tool_call_id {call_id!r} answers none)."
                )
            pending.remove(call_id)
            continue
        if pending:
            raise _unanswered(pending)
        if role == "assistant":
            pending = _tool_call_ids(message, where, seen)
    if pending:
        raise _unanswered(pending)
