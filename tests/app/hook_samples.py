"""Hook JSON as Claude Code and Gemini CLI document it (their hooks references), for the tests
of ``retrace.app.hooks``, ``retrace hook`` and the relay's ``hook`` method."""

from __future__ import annotations

from typing import Any

SESSION = "8c35adc1-6f1e-4c3b-9d3e-0a1b2c3d4e5f"


def claude(event: str, cwd: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook event: the common fields plus ``fields``."""
    return {
        "session_id": fields.pop("session_id", SESSION),
        "transcript_path": f"/home/u/.claude/projects/p/{SESSION}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def claude_tool(
    event: str, cwd: str, tool: str, tool_input: dict[str, Any], use_id: str, **more: Any
) -> dict[str, Any]:
    extra: dict[str, Any] = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": use_id, **more}
    if event == "PostToolUse":
        extra.setdefault("tool_response", {"success": True})
    return claude(event, cwd, **extra)


def gemini(event: str, cwd: str, **fields: Any) -> dict[str, Any]:
    """A Gemini CLI hook event: the base fields plus ``fields``."""
    return {
        "session_id": fields.pop("session_id", "g-" + SESSION),
        "transcript_path": "/home/u/.gemini/tmp/chats/session.json",
        "cwd": cwd,
        "hook_event_name": event,
        "timestamp": "2026-12-06T07:00:00.000Z",
        **fields,
    }


def gemini_tool(event: str, cwd: str, tool: str, tool_input: dict[str, Any], **more: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {"tool_name": tool, "tool_input": tool_input, **more}
    if event == "AfterTool":
        extra.setdefault("tool_response", {"llmContent": "ok", "returnDisplay": "ok"})
    return gemini(event, cwd, **extra)
