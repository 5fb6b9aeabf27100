"""The permission policy that runs before a tool executes.

Reads are always allowed, and so is starting a subagent (``task``): each of its child's tool
calls is decided under this same policy, so a child can never do more than its parent. Writes
(``write_file``, ``edit_file``) and commands (``run_command``) follow their setting: ``auto``
allows, ``deny`` refuses, ``ask`` asks the host (the user); the tools of MCP servers
(``mcp__<server>__<tool>``) are a class of their own with its own setting (``mcp``, default
``ask``: such a tool can do anything its server can). An ``allowAlways`` answer allows that
tool for the rest of the session (kept in memory only: a restart asks again, which is the safe
direction); each answer remembers the newest checkpoint when it was given (its *anchor*), so a
conversation restore drops the answers given after its target (:meth:`PermissionPolicy.rewind`,
:mod:`retrace.agent.rewind`). Every question carries the complete text of what would run
(:mod:`retrace.agent.review`), so the user approves exactly what they can see.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal

from retrace.agent.mcp.config import is_mcp_tool
from retrace.agent.notifications import AgentHost, PermissionRequest
from retrace.agent.review import one_line, review_for
from retrace.agent.tools import TOOLS
from retrace.camel import CamelModel

PermissionSetting = Literal["ask", "auto", "deny"]


class PermissionSettings(CamelModel):
    write: PermissionSetting = "ask"
    """Policy for write_file and edit_file."""
    command: PermissionSetting = "ask"
    """Policy for run_command."""
    mcp: PermissionSetting = "ask"
    """Policy for the tools of MCP servers."""


class PermissionPolicy:
    """Decides per tool call; remembers ``allowAlways`` answers per session."""

    def __init__(self, settings: PermissionSettings) -> None:
        self.settings = settings
        self._always: dict[str, set[str]] = {}
        self._anchors: dict[str, dict[str, str | None]] = {}
        """Session → tool → the newest checkpoint when its ``allowAlways`` was given."""

    def setting_for(self, tool: str) -> PermissionSetting:
        if is_mcp_tool(tool) and tool not in TOOLS:
            return self.settings.mcp
        spec = TOOLS.get(tool)
        if spec is None or spec.category in ("read", "agent"):
            return "auto"
        return self.settings.write if spec.category == "write" else self.settings.command

    def for_child(self, parent_session: str, child_session: str) -> PermissionPolicy:
        """A subagent's policy: the same settings and the parent session's ``allowAlways``
        answers, never more (answers given inside the child stay the child's)."""
        child = PermissionPolicy(self.settings)
        child._always[child_session] = set(self._always.get(parent_session, set()))
        return child

    def remembered(self, session_id: str, tool: str) -> bool:
        """Whether the user answered ``allowAlways`` for this tool in this session."""
        return tool in self._always.get(session_id, set())

    async def decide(
        self,
        host: AgentHost,
        session_id: str,
        tool: str,
        tool_input: dict[str, Any],
        *,
        request_id: str | None = None,
        anchor: str | None = None,
    ) -> Literal["allow", "deny"]:
        """``anchor``: the newest checkpoint now (kept with an ``allowAlways`` answer)."""
        setting = self.setting_for(tool)
        if setting == "auto" or self.remembered(session_id, tool):
            return "allow"
        if setting == "deny":
            return "deny"
        review = review_for(tool, tool_input)
        request = PermissionRequest(
            session_id=session_id,
            request_id=request_id or uuid.uuid4().hex,
            tool=tool,
            input=tool_input,
            summary=one_line(tool, review.path if review.path is not None else review.text),
            review=review,
        )
        decision = await host.ask_permission(request)
        if decision == "allowAlways":
            self._always.setdefault(session_id, set()).add(tool)
            self._anchors.setdefault(session_id, {})[tool] = anchor
            return "allow"
        return "allow" if decision == "allow" else "deny"

    def anchors(self, session_id: str) -> dict[str, str | None]:
        """Tool → anchor of this session's ``allowAlways`` answers (inherited ones: ``None``)."""
        return {
            tool: self._anchors.get(session_id, {}).get(tool) for tool in self._always.get(session_id, set())
        }

    def rewind(self, session_id: str, kept: Callable[[str | None], bool]) -> list[str]:
        """Drop the session's ``allowAlways`` answers whose anchor ``kept`` refuses; returns the
        tools dropped (sorted): they are asked again."""
        dropped = sorted(tool for tool, anchor in self.anchors(session_id).items() if not kept(anchor))
        for tool in dropped:
            self._always[session_id].discard(tool)
            self._anchors.get(session_id, {}).pop(tool, None)
        return dropped
