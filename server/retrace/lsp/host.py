"""The agent's host inside the server: events become notifications, permission asks a request.

Implements :class:`retrace.agent.notifications.AgentHost` on top of the JSON-RPC connection:
``emit`` → ``retrace/agent/event``, then every registered feature's ``on_event``, in the
registry's order (:mod:`retrace.lsp.feature_lifecycle`; the timeline's feature turns a new
checkpoint into ``retrace/timeline/didChange``), and, for an event of a further folder
(:data:`~retrace.lsp.rpc.FOLDER` set), that folder's own features after them. The host names no
feature and no event type; ``ask_permission`` → ``retrace/permission/request`` (an unanswerable
or malformed answer is a ``deny``: the agent must never act on a missing consent); editor state
and dirty paths come from the latest ``retrace/editor/didChangeState``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from retrace.agent.notifications import (
    CheckpointCreated,
    EventBase,
    PermissionDecision,
    PermissionRequest,
    PermissionResponse,
)
from retrace.lsp.rpc import FOLDER

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


class LspAgentHost:
    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def emit(self, event: CheckpointCreated | EventBase) -> None:
        self.server.send_notification("retrace/agent/event", event)
        await self.server.features.on_event(event)
        folder = self.server.folder_features.get(FOLDER.get() or "")
        if folder is not None:  # an event of a further folder (its relay): its own features too
            await folder.on_event(event)

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
