"""The agent's host inside the server: events become notifications, permission asks a request.

Implements :class:`retrace.agent.notifications.AgentHost` on top of the JSON-RPC connection:
``emit`` → ``retrace/agent/event`` (and ``retrace/timeline/didChange`` for a new checkpoint);
``ask_permission`` → ``retrace/permission/request`` (an unanswerable or malformed answer is a
``deny``: the agent must never act on a missing consent); editor state and dirty paths come from
the latest ``retrace/editor/didChangeState``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from retrace.agent.notifications import (
    CheckpointCreated,
    ConversationChanged,
    EventBase,
    PermissionDecision,
    PermissionRequest,
    PermissionResponse,
    TurnFinished,
    TurnStarted,
)
from retrace.app.timeline import timeline_change
from retrace.lsp.services import git_mirror, timeline

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


class LspAgentHost:
    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def emit(self, event: CheckpointCreated | EventBase) -> None:
        self.server.send_notification("retrace/agent/event", event)
        ready = self.server.services_if_ready()
        if ready is not None and isinstance(event, TurnStarted | ConversationChanged):
            changed = event
            await ready.run(lambda _e: timeline.journal_changed(ready, changed))
        remote = self.server.remote
        if remote is not None and isinstance(event, CheckpointCreated):
            remote.checkpoint_created()
        elif remote is not None and isinstance(event, TurnFinished):
            remote.turn_ended()
        if ready is not None and isinstance(event, TurnFinished):
            await git_mirror.turn_ended(self.server, ready, event.session_id)
            self.server.metrics.schedule_check()
        elif isinstance(event, CheckpointCreated):
            self.server.metrics.checkpoint_created()
        if isinstance(event, CheckpointCreated):
            cp = event.checkpoint
            change = await ready.run(lambda e: timeline.change_of(ready, e, cp)) if ready else None
            if change is None:
                calls = ready.agent.search_tool_calls(session_id=event.session_id) if ready else []
                change = timeline_change(cp, calls)
            self.server.send_notification("retrace/timeline/didChange", change)

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        try:
            raw = await self.server.send_request("retrace/permission/request", request)
            return PermissionResponse.model_validate(raw).decision
        except ValidationError as exc:
            log.warning("permission answer for %s was malformed (%s): denied", request.tool, exc)
        except Exception as exc:
            log.warning("permission request for %s failed (%s): denied", request.tool, exc)
        return "deny"

    def editor_state(self) -> dict[str, Any] | None:
        return self.server.editor_state

    def dirty_paths(self) -> set[str]:
        return self.server.dirty_paths()
