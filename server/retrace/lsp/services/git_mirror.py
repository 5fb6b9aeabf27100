"""The per-turn git mirror (setting ``retrace.git.mirrorTurns``, off by default): at each turn
end the session's latest checkpoint is committed onto ``refs/heads/retrace/<session id>``
(:func:`retrace.app.handoff.export.mirror_turn`), never checked out. Runs through the engine
gate; any failure (no git, not a repository, a ref moved meanwhile) is logged and never fails
the turn. Not in an untrusted workspace."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from retrace.app.handoff.export import mirror_session

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


async def turn_ended(server: RetraceServer, services: Services, session_id: str) -> None:
    if not server.settings.git.mirror_turns or not server.trusted:
        return
    try:
        await services.run(lambda engine: mirror_session(engine, session_id))
    except Exception:  # the mirror never fails a turn
        log.exception("git mirror of session %s failed", session_id)
