"""``retrace/bookmark/create`` and ``retrace/bookmark/name``: named checkpoints from the editor.

Thin: the rules are :mod:`retrace.engine.bookmarks` (one owner of the manual checkpoint, shared with
the relay's ``checkpoint`` for the CLI and ``retrace mcp``) and the name rule. Both run in the
engine gate, so a bookmark is recorded between two of an agent's tool checkpoints, never inside
one; while any turn runs (Retrace's own or another agent's) it captures no file, naming the state
the last checkpoint recorded. A new checkpoint is told like any other (``checkpointCreated``, the
timeline's ``didChange``); a name is read by the next timeline request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.agent.notifications import CheckpointCreated
from retrace.app.timeline.agents import running_turns
from retrace.engine.bookmarks import bookmark_now, name_checkpoint
from retrace.protocol.bookmarks import (
    BookmarkCreateParams,
    BookmarkCreateResult,
    BookmarkNameParams,
    BookmarkNameResult,
)

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.engine.models import Checkpoint
    from retrace.lsp.services.port import AgentEmit


def _turn_running(services: Services, engine: Engine) -> bool:
    """Any agent's turn runs now: Retrace's own sessions, or another agent's (its hooks)."""
    return any(services.agent.running(sid) for sid in engine.sessions()) or bool(running_turns(engine))


async def create(emit: AgentEmit, services: Services, params: BookmarkCreateParams) -> BookmarkCreateResult:
    def record(engine: Engine) -> Checkpoint:
        return bookmark_now(engine, params.name, between_tools=_turn_running(services, engine))

    cp = await services.run(record)
    await emit(CheckpointCreated(session_id=cp.session_id, checkpoint=cp))
    return BookmarkCreateResult(checkpoint=cp, name=cp.label)


async def name(services: Services, params: BookmarkNameParams) -> BookmarkNameResult:
    named = await services.run(lambda e: name_checkpoint(e, params.checkpoint_id, params.name))
    return BookmarkNameResult(checkpoint_id=named.checkpoint.id, name=named.name)
