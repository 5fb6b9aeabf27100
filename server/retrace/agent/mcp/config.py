"""MCP server configuration: the ``servers`` map VS Code and other agents use, and tool names.

``{name: {"type": "stdio", "command", "args", "env", "cwd"} | {"type": "http", "url", "headers"}}``
(``type`` may be left out: a ``command`` means stdio, a ``url`` HTTP; ``"streamableHttp"`` is
accepted for ``http``). A stdio server runs in the workspace root unless ``cwd`` says otherwise,
with the SDK's minimal inherited environment plus ``env`` (never the model API credentials: the
server process holds none in its environment).

A tool ``t`` of server ``s`` is offered as ``mcp__<s>__<t>``, made valid for the Messages API
tool-name pattern (``[a-zA-Z0-9_-]{1,64}``): other characters become ``_``, and a name too long
is cut and given a short hash of the full name, so two tools never share a name.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from retrace.camel import CamelModel

PREFIX = "mcp__"
MAX_NAME = 64
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


class _Server(CamelModel):
    model_config = ConfigDict(extra="ignore")  # mcp.json entries carry fields of other tools


class StdioServer(_Server):
    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    """Relative to the workspace root; default: the root."""


class HttpServer(_Server):
    type: Literal["http"] = "http"
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)


McpServerConfig = Annotated[StdioServer | HttpServer, Field(discriminator="type")]


def _with_type(raw: Any) -> Any:
    """A server entry with its ``type`` spelled as ours (inferred when left out)."""
    if not isinstance(raw, dict):
        return raw
    kind = raw.get("type")
    if kind == "streamableHttp":
        return {**raw, "type": "http"}
    if kind is None:
        return {**raw, "type": "http" if "url" in raw and "command" not in raw else "stdio"}
    return raw


class McpSettings(CamelModel):
    """The ``retrace.mcp`` settings section."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """Server name → how to reach it."""
    start_timeout_seconds: float = Field(default=30.0, gt=0)
    """How long a turn waits for a server to start before going on without its tools."""
    call_timeout_seconds: float = Field(default=300.0, gt=0)
    """How long one tool call may take before it ends with an error."""

    @model_validator(mode="before")
    @classmethod
    def _infer_types(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("servers"), dict):
            return {**data, "servers": {k: _with_type(v) for k, v in data["servers"].items()}}
        return data


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server`` (valid, unique per (server, tool))."""
    full = f"{PREFIX}{server}__{tool}"
    name = _INVALID.sub("_", full)
    if len(name) <= MAX_NAME and name == full:
        return name
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def is_mcp_tool(name: str) -> bool:
    return name.startswith(PREFIX)
