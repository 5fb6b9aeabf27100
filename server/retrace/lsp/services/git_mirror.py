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
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)

_OIDS: dict[str, dict[str, str]] = {}
"""Per store: Retrace blob id → git blob id already in the repository (unchanged files are not
read again at the next turn end). Bounded by :data:`_OIDS_MAX` entries per store."""
_OIDS_MAX = 200_000


def _oids(store: str) -> dict[str, str]:
    cache = _OIDS.setdefault(store, {})
    if len(cache) > _OIDS_MAX:
        cache.clear()
    return cache


async def turn_ended(server: ServerPort, services: Services, session_id: str) -> None:
    if not server.settings.git.mirror_turns or not server.trusted:
        return
    try:
        await services.run(lambda engine: mirror_session(engine, session_id, _oids(str(engine.store_dir))))
    except Exception:  # the mirror never fails a turn
        log.exception("git mirror of session %s failed", session_id)
