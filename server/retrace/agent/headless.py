"""``retrace run``: one agent turn without an editor, events printed as plain lines.

Permissions come from the ``permission`` argument (``auto`` allows writes and commands, ``deny``
refuses them; ``ask`` has nobody to ask and so denies too). The model endpoint is the
environment's (``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``) or the offline fake model
(:func:`retrace.fakemodel.start_for_env`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TextIO

from retrace.agent.events import (
    AgentError,
    CheckpointCreated,
    PermissionDecision,
    PermissionRequest,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)
from retrace.agent.permissions import PermissionSettings
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError

EXIT_CODES = {"end_turn": 0, "cancelled": 130}


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


async def run_task(
    workspace: Path,
    store: Path | None,
    prompt: str,
    *,
    session_id: str | None,
    permission: str,
    out: TextIO,
) -> int:
    """Run one turn headless; exit code 0 when it ended normally, 130 when cancelled, else 1."""
    if permission not in ("auto", "deny", "ask"):
        raise RetraceError(f"unknown permission policy {permission!r} (auto | deny | ask)")
    from retrace.fakemodel import start_for_env

    base_url = await asyncio.to_thread(start_for_env)
    settings = AgentSettings(
        base_url=base_url,
        permissions=PermissionSettings(write=permission, command=permission),
    )
    host = PrintingHost(out, permission)
    engine = await asyncio.to_thread(Engine.open, workspace, store)
    try:
        service = AgentService(engine, host, settings)
        await service.load()
        sid, _ = await service.prompt(prompt, session_id)
        out.write(f"session {sid}\n")
        try:
            await service.wait_idle(sid)
        except (KeyboardInterrupt, asyncio.CancelledError):
            await service.cancel(sid)
    finally:
        await asyncio.to_thread(engine.close)
    return EXIT_CODES.get(host.stop_reason or "error", 1)
