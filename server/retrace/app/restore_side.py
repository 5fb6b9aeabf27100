"""After a code-only restore: tell the model of the target's session (at its next prompt) which
files the restore reverted. Only Retrace's own sessions have a model to tell (another agent's
session, a checkpoint of no conversation: nothing to do). The one owner for every front end,
called by the one restore sequence (:mod:`retrace.app.restore_sequence`). The note
itself and its lifecycle: :mod:`retrace.agent.restore_notes`. Conversation restores rewind the
side state themselves (:mod:`retrace.agent.rewind`)."""

from __future__ import annotations

import logging

from retrace.agent.notifications import BackgroundTaskView
from retrace.agent.session import AgentService
from retrace.app.restore import checkpoint_agent
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, RestoreOutcome

log = logging.getLogger(__name__)


async def tell_code_restore(agent: AgentService, target: Checkpoint, outcome: RestoreOutcome) -> bool:
    """Journal the note for the target's session; ``False``: there was nobody to tell."""
    if outcome.kind != "applied" or outcome.dry_run:
        return False
    if await agent.gate.run(lambda e: checkpoint_agent(e, target.id)) is not None:
        return False
    try:
        await agent.note_code_restore(target.session_id, outcome)
    except RetraceError as e:  # no conversation in that session (a baseline's): nobody to tell
        log.debug("code restore to %s: no model to tell (%s)", target.id, e)
        return False
    return True


def with_stopped(
    views: list[BackgroundTaskView], stopped: list[BackgroundTaskView]
) -> list[BackgroundTaskView]:
    """The restore result's background commands: as they were when asked, except the ones the
    conversation part stopped (as they are now), in the same order (new ones appended)."""
    now = {v.handle: v for v in stopped}
    out = [now.pop(v.handle, v) for v in views]
    return [*out, *now.values()]
