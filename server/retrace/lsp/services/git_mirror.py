"""The per-turn git mirror (setting ``retrace.git.mirrorTurns``, off by default): at each turn
end the session's latest checkpoint is committed onto ``refs/heads/retrace/<session id>``
(:func:`retrace.app.handoff.export.mirror_turn`), never checked out. Runs through the engine
gate; any failure (no git, not a repository, a ref moved meanwhile) is logged and never fails
the turn. Not in an untrusted workspace."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from retrace.app.handoff.export import mirror_turn
from retrace.engine.errors import RetraceError

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


def _mirror(engine: Engine, session_id: str) -> None:
    head = engine.head
    if head.session_id != session_id:
        mine = engine.timeline(session_id)
        if not mine:
            return
        head = mine[-1]
    try:
        commit = mirror_turn(engine, session_id, head.id)
    except (RetraceError, OSError) as exc:
        log.warning("git mirror of session %s skipped: %s", session_id, exc)
        return
    if commit is not None:
        log.info("git mirror: refs/heads/retrace/%s -> %s (checkpoint %s)", session_id, commit, head.id)


async def turn_ended(server: RetraceServer, services: Services, session_id: str) -> None:
    if not server.settings.git.mirror_turns or not server.trusted:
        return
    try:
        await services.run(lambda engine: _mirror(engine, session_id))
    except Exception:  # the mirror never fails a turn
        log.exception("git mirror of session %s failed", session_id)
