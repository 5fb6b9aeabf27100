"""The agent's host without an editor (``retrace run``): events printed as plain lines.

Permissions come from the ``permission`` argument (``auto`` allows writes and commands, ``deny``
refuses them; ``ask`` has nobody to ask and so denies too).
"""

from __future__ import annotations

from typing import Any, TextIO

from retrace.agent.events import (
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


class PrintingHost:
    """An :class:`~retrace.agent.events.AgentHost` that prints events and answers by policy."""

    def __init__(self, out: TextIO, permission: str) -> None:
        self.out = out
        self.permission = permission
        self.stop_reason: str | None = None
        self._in_text = False

    def _line(self, text: str) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    async def emit(self, event: Any) -> None:
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._in_text = True
        elif isinstance(event, ToolCallStarted):
            detail = event.input.get("command") or event.input.get("path") or ""
            self._line(f"-> {event.tool} {detail}".rstrip())
        elif isinstance(event, ToolCallFinished):
            first = event.output.strip().splitlines()[-1:] if event.status != "ok" else []
            self._line(f"   {event.status} ({event.duration_ms:.0f} ms){': ' + first[0] if first else ''}")
        elif isinstance(event, CheckpointCreated):
            cp = event.checkpoint
            files = ", ".join(f.path for f in cp.files[:5]) + (" ..." if len(cp.files) > 5 else "")
            self._line(f"   checkpoint {cp.id} [{cp.kind}] {files}".rstrip())
        elif isinstance(event, AgentError):
            self._line(f"{'warning' if event.retrying else 'error'}: {event.message}")
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
        self._line(f"   permission for {request.summary}: denied (no one to ask; use --permission auto)")
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
    return f"   background {task.handle} {status} (pid {task.pid}): {task.command.splitlines()[0][:100]}"
