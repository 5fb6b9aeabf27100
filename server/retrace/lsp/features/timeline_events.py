"""The timeline's side of the agent's events as a feature: a turn's start or a conversation
change refreshes the timeline cache of that session's journal; a new checkpoint becomes
``retrace/timeline/didChange`` (the row the timeline cache built, else one from the checkpoint
and the session's tool calls). Last in the registry: the client hears of a checkpoint once every
other feature took note of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.notifications import CheckpointCreated, ConversationChanged, TurnStarted
from retrace.app.timeline import timeline_change
from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.services import timeline

if TYPE_CHECKING:
    from retrace.agent.notifications import EventBase
    from retrace.lsp.server import RetraceServer


class TimelineEventsFeature(Feature):
    name = "timeline"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        ready = self.server.services_if_ready()
        if ready is not None and isinstance(event, TurnStarted | ConversationChanged):
            changed = event
            await ready.run(lambda _e: timeline.journal_changed(ready, changed))
        if isinstance(event, CheckpointCreated):
            cp = event.checkpoint
            change = await ready.run(lambda e: timeline.change_of(ready, e, cp)) if ready else None
            if change is None:
                calls = ready.agent.search_tool_calls(session_id=event.session_id) if ready else []
                change = timeline_change(cp, calls)
            self.server.send_notification("retrace/timeline/didChange", change)
