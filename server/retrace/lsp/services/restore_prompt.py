"""``retrace/restore/toPrompt``: a restore whose target is a chat prompt's restore point.

The point is resolved by the pure :func:`retrace.app.prompt_points.resolve` (the code checkpoint
in force when the prompt was sent, or at its turn's end; the conversation head then), and the
restore itself is the ordinary one (:class:`~retrace.lsp.services.restore.RestoreService`: dry
run, conflicts, unsaved buffers, background commands, other agents, the editor applier, undo),
with the conversation of the prompt's own session moved to that exact head.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.session import MessageAt
from retrace.app.prompt_points import CheckpointRef, resolve
from retrace.app.restore_conversation import ConversationTarget
from retrace.engine.errors import RetraceError
from retrace.protocol.models import RestoreParams
from retrace.protocol.prompt_restore import RestoreToPromptParams, RestoreToPromptResult

if TYPE_CHECKING:
    from retrace.engine import Engine
    from retrace.lsp.services.restore import RestoreService


def _refs(engine: Engine, session_id: str) -> list[CheckpointRef]:
    return [CheckpointRef(c.id, c.parent, c.turn_id) for c in engine.timeline(session_id)]


async def restore_to_prompt(service: RestoreService, params: RestoreToPromptParams) -> RestoreToPromptResult:
    if params.task is not None:
        raise RetraceError("a prompt's restore point is in the workspace's timeline, not a subagent's")
    services = service.services
    conv = await services.agent.folded(params.session_id)
    refs = await services.run(lambda e: _refs(e, params.session_id))
    point = resolve(conv, params.prompt, params.point, refs)
    fields = {name: getattr(params, name) for name in RestoreParams.model_fields}
    restore = RestoreParams(**{**fields, "id": point.checkpoint})
    result = await service.restore(restore, ConversationTarget(params.session_id, MessageAt(point.head)))
    return RestoreToPromptResult(
        **{name: getattr(result, name) for name in type(result).model_fields},
        checkpoint=point.checkpoint,
        turn_id=point.turn_id,
        prompt_text=point.prompt_text,
        exact=point.exact,
    )
