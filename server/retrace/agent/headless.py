"""The agent's host without an editor (``retrace run``): events printed as plain lines.

Permissions come from the ``permission`` argument (``auto`` allows writes and commands, ``deny``
refuses them; ``ask`` has nobody to ask and so denies too).

Everything printed comes from the model, the workspace or tools: file names go through
:func:`~retrace.text.quote_name`, every other text through :func:`~retrace.text.terminal_text`,
so no byte of theirs can drive the terminal.
"""

from __future__ import annotations

from typing import Any, TextIO

from retrace.agent.notifications import (
    AgentError,
    BackgroundTaskChanged,
    CheckpointCreated,
    ContextCompacted,
    PermissionDecision,
    PermissionRequest,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)
from retrace.text import quote_name, terminal_text


class PrintingHost:
    """An :class:`~retrace.agent.notifications.AgentHost` that prints events and answers by policy."""

    def __init__(self, out: TextIO, permission: str) -> None:
        self.out = out
        self.permission = permission
        self.stop_reason: str | None = None
        self._in_text = False

    def _line(self, text: str) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.write(terminal_text(text, keep_newlines=True) + "\n")
        self.out.flush()

    async def emit(self, event: Any) -> None:
        if isinstance(event, TextDelta):
            self.out.write(terminal_text(event.text, keep_newlines=True))
            self.out.flush()
            self._in_text = True
        elif isinstance(event, ToolCallStarted):
            self._line(f"-> {terminal_text(event.tool)} {_detail(event.input)}".rstrip())
        elif isinstance(event, ToolCallFinished):
            first = event.output.strip().splitlines()[-1:] if event.status != "ok" else []
            said = f": {terminal_text(first[0])}" if first else ""
            self._line(f"   {event.status} ({event.duration_ms:.0f} ms){said}")
        elif isinstance(event, CheckpointCreated):
            cp = event.checkpoint
            files = ", ".join(quote_name(f.path) for f in cp.files[:5]) + (
                " ..." if len(cp.files) > 5 else ""
            )
            self._line(f"   checkpoint {cp.id} [{cp.kind}] {files}".rstrip())
        elif isinstance(event, AgentError):
            self._line(f"{'warning' if event.retrying else 'error'}: {terminal_text(event.message)}")
        elif isinstance(event, BackgroundTaskChanged):
            self._line(background_line(event))
        elif isinstance(event, ContextCompacted):
            self._line(
                f"   context compacted: {event.summarized_messages} earlier messages summarized "
                f"(~{event.tokens_before:,} of {event.context_window:,} tokens; checkpoint "
                f"{event.checkpoint_id} and the ones before keep them)"
            )
        elif isinstance(event, Usage):
            pass
        elif isinstance(event, TurnFinished):
            self.stop_reason = event.stop_reason
            self._line(f"[turn finished: {event.stop_reason}]")

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        self._line(
            f"   permission for {terminal_text(request.summary)}: "
            "denied (no one to ask; use --permission auto)"
        )
        return "deny"

    def editor_state(self) -> dict[str, Any] | None:
        return None

    def dirty_paths(self) -> set[str]:
        return set()


def background_line(event: BackgroundTaskChanged) -> str:
    """``   background bg-1 running (pid 12): npm run dev`` / ``... exited (code 0)`` / ``... stopped``."""
    task = event.task
    status: str = task.state
    if task.state == "exited":
        status = f"exited (code {task.exit_code})"
    elif task.state == "stopped" and task.stopped_by:
        status = f"stopped ({task.stopped_by})"
    command = terminal_text((task.command.splitlines() or [""])[0][:100])
    return f"   background {task.handle} {status} (pid {task.pid}): {command}"


def _detail(tool_input: dict[str, Any]) -> str:
    """What a tool call works on: its command (text) or its path (a name)."""
    command = tool_input.get("command")
    if isinstance(command, str) and command:
        return terminal_text(command)
    path = tool_input.get("path")
    return quote_name(path) if isinstance(path, str) else ""
