"""THE interface of an external agent's hooks (:class:`AgentAdapter`) and the table-driven
parser most agents need (:class:`TableAdapter`).

An adapter is pure: ``parse(raw)`` turns one hook call's JSON object (the agent's documented
fields) into a :class:`~retrace.app.hooks.model.HookEvent`, or raises
:class:`~retrace.app.hooks.model.HookInputError` with one line naming the field at fault. It
never touches the disk or the store. Every byte is untrusted: the event name, the session id and
(for tool events) the tool name must be strings; optional fields of the wrong type are ignored
with a warning; the tool input's summary is one line, capped, with known secret formats
redacted (:mod:`retrace.redact`).

A third agent is one small module building a :class:`TableAdapter` (its event names, its
file-writing tools and the input keys naming their paths, its read-only tools) — or any object
with ``name``, ``title``, ``project_dir_env``, ``install`` (its settings file and the hook
events Retrace registers for: :class:`~retrace.app.hooks.install.AgentInstall`) and ``parse`` —
plus one line in ``registry.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from retrace.app.hooks.install import AgentInstall
from retrace.app.hooks.model import EXTERNAL_ID_MAX, HookEvent, HookInputError, HookKind
from retrace.redact import redact

SUMMARY_MAX = 200
"""The longest input summary (characters) a checkpoint label gets."""
NAME_MAX = 256
"""The longest event name, tool name or tool-use id kept."""
PATH_MAX = 4096
PROMPT_MAX = 64 << 10
"""The longest prompt a turn keeps (characters; the rest is counted, not stored)."""
_SUMMARY_KEYS = (
    "command",
    "file_path",
    "notebook_path",
    "absolute_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
)
"""Input keys whose value describes a call best, in order (the first string one wins)."""
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class AgentAdapter(Protocol):
    """One external agent's hooks: its name (``AGENT_NAME``), a title for people, the
    environment variables naming its project folder, and the pure parser of its hook JSON."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def project_dir_env(self) -> tuple[str, ...]: ...

    @property
    def install(self) -> AgentInstall:
        """Where and how ``retrace integrate`` writes Retrace's hooks into the agent's settings."""
        ...

    def parse(self, raw: Mapping[str, Any]) -> HookEvent: ...


@dataclass(frozen=True)
class TableAdapter:
    """An adapter defined by tables: ``events`` maps the agent's event names to what they mean
    (names not listed are ``ignored``), ``failed_events`` are tool events of a failed call,
    ``file_tools`` maps a file-writing tool to the input keys naming its path(s),
    ``read_only_tools`` change nothing (an empty checkpoint); any other tool is detected."""

    name: str
    title: str
    project_dir_env: tuple[str, ...]
    events: Mapping[str, HookKind]
    file_tools: Mapping[str, tuple[str, ...]]
    read_only_tools: frozenset[str]
    install: AgentInstall
    failed_events: frozenset[str] = field(default=frozenset())
    stop_reasons: Mapping[str, str] = field(default_factory=dict)
    """A fixed ``reason`` per stop-like event name (else the event's own ``reason`` field)."""

    def parse(self, raw: Mapping[str, Any]) -> HookEvent:
        if not isinstance(raw, Mapping):
            raise HookInputError(f"a {self.title} hook event must be a JSON object, not {_kind(raw)}")
        warnings: list[str] = []
        hook_name = _required_text(raw, "hook_event_name", NAME_MAX)
        kind = self.events.get(hook_name, "ignored")
        base: dict[str, Any] = {
            "agent": self.name,
            "hook_name": hook_name,
            "cwd": _optional_text(raw, "cwd", PATH_MAX, warnings),
            "transcript_path": _optional_text(raw, "transcript_path", PATH_MAX, warnings),
        }
        if kind == "ignored":
            session = raw.get("session_id")
            ext = session if isinstance(session, str) and len(session) <= EXTERNAL_ID_MAX else ""
            return HookEvent(kind=kind, external_session_id=ext, reason="not recorded", **base)
        base["external_session_id"] = _required_text(raw, "session_id", EXTERNAL_ID_MAX)
        if kind == "prompt":
            prompt = _optional_text(raw, "prompt", None, warnings) or ""
            if len(prompt) > PROMPT_MAX:  # the agent's transcript keeps it whole
                prompt = f"{prompt[:PROMPT_MAX]}\n[… {len(prompt) - PROMPT_MAX} more characters]"
            return HookEvent(kind=kind, prompt=prompt, warnings=tuple(warnings), **base)
        if kind in ("preTool", "postTool"):
            return self._tool_event(raw, kind, base, warnings)
        reason = self.stop_reasons.get(hook_name) or _optional_text(raw, "reason", 64, warnings) or "stop"
        return HookEvent(kind=kind, reason=reason[:64], warnings=tuple(warnings), **base)

    def _tool_event(
        self, raw: Mapping[str, Any], kind: HookKind, base: dict[str, Any], warnings: list[str]
    ) -> HookEvent:
        tool = one_line(_required_text(raw, "tool_name", NAME_MAX))  # a name shown in the timeline
        tool_input = raw.get("tool_input")
        if not isinstance(tool_input, Mapping):
            if tool_input is not None:
                warnings.append(f"tool_input is {_kind(tool_input)}, not an object: ignored")
            tool_input = {}
        cwd = base["cwd"]
        paths = self._paths(tool, tool_input, warnings)
        summary = summarize(tool_input, cwd)
        use_id = _optional_text(raw, "tool_use_id", NAME_MAX, warnings) or _derived_id(
            self.name, raw, summary
        )
        return HookEvent(
            kind=kind,
            tool=tool,
            tool_use_id=use_id,
            summary=summary,
            changed_paths=paths,
            failed=base["hook_name"] in self.failed_events or _reports_error(raw.get("tool_response")),
            warnings=tuple(warnings),
            **base,
        )

    def _paths(self, tool: str, tool_input: Mapping[str, Any], warnings: list[str]) -> tuple[str, ...] | None:
        if tool in self.read_only_tools:
            return ()
        keys = self.file_tools.get(tool)
        if keys is None:
            return None  # a shell or unknown tool: the engine detects what it changed
        for key in keys:
            value = tool_input.get(key)
            if isinstance(value, str) and value and len(value) <= PATH_MAX and "\x00" not in value:
                return (value,)
            if value is not None:
                warnings.append(f"tool_input.{key} is not a usable path: ignored")
        warnings.append(f"{tool} names no file ({' or '.join(keys)}): its changes are detected")
        return None


def summarize(tool_input: Mapping[str, Any], cwd: str | None) -> str:
    """One line describing a tool's input: the first of the usual keys holding a string (a path
    shown relative to ``cwd`` when under it), else ``key=value`` of the first few plain values;
    secrets redacted, control characters and runs of spaces folded, at most :data:`SUMMARY_MAX`."""
    text = ""
    for key in _SUMMARY_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            text = _relative(value, cwd) if key.endswith("path") else value
            break
    else:
        plain = [(k, v) for k, v in tool_input.items() if isinstance(v, str | int | float | bool)]
        text = " ".join(f"{k}={v}" for k, v in plain[:4])
    return one_line(redact(text[: SUMMARY_MAX * 20]))


def one_line(text: str) -> str:
    """``text`` as one printable line of at most :data:`SUMMARY_MAX` characters."""
    flat = _SPACE.sub(" ", _CONTROL.sub(" ", text)).strip()
    return flat if len(flat) <= SUMMARY_MAX else flat[: SUMMARY_MAX - 1].rstrip() + "…"


def _relative(path: str, cwd: str | None) -> str:
    if cwd and Path(path).is_absolute() and Path(cwd).is_absolute():
        prefix = cwd.rstrip("/\\") + os.sep
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _derived_id(agent: str, raw: Mapping[str, Any], summary: str) -> str | None:
    """A call id for an agent that sends none (Gemini CLI), when the event is stamped: the same
    event delivered twice (a retry after a server died answering) names the same call, so it is
    recorded once. Unstamped events get none (two identical calls would look like one)."""
    stamp = raw.get("timestamp")
    if not isinstance(stamp, str) or not stamp:
        return None
    basis = [
        raw.get("session_id"),
        stamp,
        raw.get("hook_event_name"),
        raw.get("tool_name"),
        raw.get("tool_input"),
    ]
    text = json.dumps(basis, sort_keys=True, ensure_ascii=True, default=str)
    return f"{agent}_{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def _reports_error(response: object) -> bool:
    """Whether a tool response says the call failed (Gemini CLI's ``error``, a ``success: false``)."""
    if not isinstance(response, Mapping):
        return False
    return bool(response.get("error")) or response.get("success") is False


def _required_text(raw: Mapping[str, Any], key: str, limit: int) -> str:
    value = raw.get(key)
    if value is None:
        raise HookInputError(f"the hook event has no {key}")
    if not isinstance(value, str):
        raise HookInputError(f"the hook event's {key} is {_kind(value)}, not a string")
    if not value.strip():
        raise HookInputError(f"the hook event's {key} is empty")
    if len(value) > limit:
        raise HookInputError(f"the hook event's {key} is over {limit} characters")
    return value


def _optional_text(raw: Mapping[str, Any], key: str, limit: int | None, warnings: list[str]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        warnings.append(f"{key} is {_kind(value)}, not a string: ignored")
        return None
    if limit is not None and len(value) > limit:
        warnings.append(f"{key} is over {limit} characters: ignored")
        return None
    return value


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)
