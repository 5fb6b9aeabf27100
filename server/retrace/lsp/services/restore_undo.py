"""The server's half of "undo exactly the last restore" (the rule is ``app/restore_undo.py``).

:func:`undo_params` turns the store's last restore (read from the journals, then kept per engine)
into the restore request that undoes its code half; the undo itself is the ordinary restore
sequence with the undo conversation strategy (``app/restore_sequence.UndoRestore``), which
journals its record like every restore's; :func:`remembered` keeps that record as the engine's
last; :func:`reason_allowed` applies the reason rule with this server's memory of when it last
asked.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from retrace.app.restore import BackgroundChoice, WhileAgentRuns
from retrace.app.restore_undo import ask_reason, last_restore, undo_plan
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import RestoreRecordEvent
from retrace.protocol.git_restore import GitChoice
from retrace.protocol.models import RestoreParams

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.engine.models import RestoreOutcome
    from retrace.lsp.services.port import ServerPort

# Weak maps: each entry lives exactly as long as its server or engine (a closed folder's engine
# is not kept alive by them, and a new object never inherits an old one's entry).
REASON_ASKED: WeakKeyDictionary[ServerPort, float] = WeakKeyDictionary()
"""Per server: when it last let the client ask for a restore's reason."""

RESTORE_LOCKS: WeakKeyDictionary[ServerPort, asyncio.Lock] = WeakKeyDictionary()
"""Per server: one restore at a time, undos included. An undo sent while a restore is still being
applied (its files already changed, its record not yet journaled) waits for it and undoes THAT
restore, not the one before it; two quick undos undo two restores, never the same one twice."""


def restore_lock(server: ServerPort) -> asyncio.Lock:
    return RESTORE_LOCKS.setdefault(server, asyncio.Lock())


LAST: WeakKeyDictionary[Engine, RestoreRecordEvent | None] = WeakKeyDictionary()
"""Per open engine: its last restore, read from the journals once, then kept by :func:`remembered`
(while the server holds the store, every restore of it goes through the server)."""


def _last(engine: Engine) -> RestoreRecordEvent | None:
    if engine in LAST:
        return LAST[engine]
    found = last_restore(engine)
    LAST[engine] = found
    return found


def remembered(engine: Engine, event: RestoreRecordEvent | None) -> None:
    """Keep the record a restore just journaled (the sequence's, ``app/restore_sequence.py``) as
    this engine's last restore (run in the gate). ``None``: the restore changed nothing."""
    if event is not None:
        LAST[engine] = event


async def undo_params(
    services: Services,
    background: BackgroundChoice | None,
    while_agent_runs: WhileAgentRuns | None,
    git_choice: GitChoice | None = None,
) -> tuple[RestoreRecordEvent, RestoreParams]:
    """The last restore and the request undoing its code half (``conversation``: none). Git as
    for any restore: when HEAD or the branch moved since the state the undo goes back to, it is
    refused with ``gitMoved`` unless ``git_choice`` says ``filesOnly`` or ``parkFirst``."""
    last = await services.run(_last)
    plan = undo_plan(last) if last is not None else None
    if last is None or plan is None:
        raise RetraceError("there is no restore to undo")
    params = RestoreParams(
        id=plan.code_to if plan.code_to is not None else last.target_id,
        mode="code" if plan.code_to is not None else "conversation",
        background_tasks=background,
        while_agent_runs=while_agent_runs,
        git_choice=git_choice,
    )
    return last, params


async def record_code(
    services: Services, target_id: str, label: str, checkpoint_id: str, before: str
) -> None:
    """Journal a code restore made outside the restore service (one hunk: ``restore_hunk.py``) as
    the last restore, so *Undo restore* takes it back to ``before`` like any other."""
    event = RestoreRecordEvent(
        mode="code", target_id=target_id, label=label, checkpoint_id=checkpoint_id, code_before=before
    )

    def append(engine: Engine) -> None:
        engine.append_event(event)
        LAST[engine] = event

    await services.run(append)


def reason_allowed(server: ServerPort, outcome: RestoreOutcome, *, undo: bool) -> bool:
    """The reason rule with this server's last question (remembered when it says yes)."""
    now = time.monotonic()
    ask = ask_reason(outcome, undo=undo, last_asked=REASON_ASKED.get(server), now=now)
    if ask:
        REASON_ASKED[server] = now
    return ask
