"""The server's half of "undo exactly the last restore" (the rule is ``app/restore_undo.py``).

:func:`undo_params` turns the store's last restore (read from the journals) into the restore
request that undoes its code half; :func:`move_conversation` does a restore's conversation half
(the target's position, or for an undo the head and terminal the undone restore recorded);
:func:`record` journals every restore that changed something, so the next undo finds it; and
:func:`reason_allowed` applies the reason rule with this server's memory of when it last asked.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from retrace.app.restore import BackgroundChoice, WhileAgentRuns, moves_conversation
from retrace.app.restore_undo import (
    ConversationMove,
    ask_reason,
    last_restore,
    remember,
    undo_plan,
)
from retrace.engine.errors import RetraceError
from retrace.engine.models import TerminalState
from retrace.engine.store.events import RestoreRecordEvent
from retrace.protocol.git_restore import GitChoice
from retrace.protocol.models import RestoreParams

if TYPE_CHECKING:
    from retrace.agent.session import SessionRestored
    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.engine.models import Checkpoint, RestoreMode, RestoreOutcome
    from retrace.lsp.services.port import ServerPort

# Weak maps: each entry lives exactly as long as its server or engine (a closed folder's engine
# is not kept alive by them, and a new object never inherits an old one's entry).
REASON_ASKED: WeakKeyDictionary[ServerPort, float] = WeakKeyDictionary()
"""Per server: when it last let the client ask for a restore's reason."""

UNDO_LOCKS: WeakKeyDictionary[ServerPort, asyncio.Lock] = WeakKeyDictionary()
"""Per server: one undo at a time, so two quick clicks undo two restores, never the same one
twice."""


def undo_lock(server: ServerPort) -> asyncio.Lock:
    return UNDO_LOCKS.setdefault(server, asyncio.Lock())


LAST: WeakKeyDictionary[Engine, RestoreRecordEvent | None] = WeakKeyDictionary()
"""Per open engine: its last restore, read from the journals once, then kept by :func:`record`
(while the server holds the store, every restore of it goes through the server)."""


def _last(engine: Engine) -> RestoreRecordEvent | None:
    if engine in LAST:
        return LAST[engine]
    found = last_restore(engine)
    LAST[engine] = found
    return found


def _remember(
    engine: Engine,
    target_id: str,
    mode: RestoreMode,
    outcome: RestoreOutcome,
    *,
    moved: ConversationMove | None,
    undoing: RestoreRecordEvent | None,
) -> None:
    event = remember(engine, target_id, mode, outcome, moved, undoing=undoing)
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


async def undo_conversation(
    services: Services,
    target: Checkpoint,
    params: RestoreParams,
    outcome: RestoreOutcome,
    undoing: RestoreRecordEvent,
) -> SessionRestored | None:
    """An undo's conversation half: back to the head the undone restore recorded (a normal
    restore's is ``app/restore_conversation.move_conversation``)."""
    if undoing.session_id is None or not moves_conversation("conversation", outcome):
        return None
    terminal = undoing.terminal_before or TerminalState()
    fork = undoing.target_id if undoing.undo else None  # a redo forks from the target again
    return await services.agent.move_head(undoing.session_id, undoing.conversation_before, terminal, fork)


async def record(
    services: Services,
    target: Checkpoint,
    mode: RestoreMode,
    outcome: RestoreOutcome,
    *,
    restored: SessionRestored | None,
    undoing: RestoreRecordEvent | None,
) -> None:
    """Journal the restore for its undo (``restoreRecord``; nothing for a dry run or no change)."""
    moved = None
    if restored is not None and restored.before is not None:
        session = undoing.session_id if undoing is not None and undoing.session_id else target.session_id
        moved = ConversationMove(session, restored.before[0], restored.before[1])
    await services.run(lambda e: _remember(e, target.id, mode, outcome, moved=moved, undoing=undoing))


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
