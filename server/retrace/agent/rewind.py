"""What a conversation restore rewinds besides the conversation: the agent's side state.

Each ``allowAlways`` answer and each background command remembers its *anchor*: the newest
checkpoint when it was given or started (:func:`newest_checkpoint`). A conversation restore to a
target keeps exactly those whose anchor is a strict ancestor of the target (they came before the
target was made); every other one came after it, or on another branch, and is dropped (the
answer: asked again) or stopped (the command). An unknown anchor is dropped too: forgetting an
answer only asks again, the safe direction. Every drop is journaled (``permissionAlways`` with
``revoked``); a stop is announced as any stop is (``stoppedBy: "restore"``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from retrace.agent.background import BackgroundTask, BackgroundTasks
from retrace.agent.conversation import Conversation
from retrace.agent.notifications import BackgroundTaskView
from retrace.agent.permissions import PermissionPolicy
from retrace.agent.runtime import Runtime, journal
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import PermissionAlwaysEvent

log = logging.getLogger(__name__)


def newest_checkpoint(engine: Engine) -> str | None:
    """The newest checkpoint of the store now (``None``: it has none yet)."""
    try:
        return engine.head.id
    except RetraceError:
        return None


def strict_ancestors(engine: Engine, target_id: str, wanted: Iterable[str | None]) -> set[str]:
    """Which of ``wanted`` are strict ancestors of ``target_id`` (one walk up its parents,
    ending early once every wanted one was seen)."""
    left = {w for w in wanted if w is not None}
    found: set[str] = set()
    seen: set[str] = set()
    try:
        current = engine.get(target_id).parent
        while current is not None and left and current not in seen:
            seen.add(current)
            if current in left:
                left.discard(current)
                found.add(current)
            current = engine.get(current).parent
    except RetraceError:
        pass  # a lost ancestor: the ones above it count as not found (dropped: the safe side)
    return found


def keeper(before: set[str]) -> Callable[[str | None], bool]:
    """The rule: an anchor is kept when it is one of the strict ancestors found."""
    return lambda anchor: anchor is not None and anchor in before


def rewound_answers(policy: PermissionPolicy, session_id: str, before: set[str]) -> list[str]:
    """Drop the session's ``allowAlways`` answers given after the target (the tools dropped)."""
    return policy.rewind(session_id, keeper(before))


def later_tasks(tasks: BackgroundTasks, session_id: str, before: set[str]) -> list[BackgroundTask]:
    """The session's running background commands started after the target."""
    kept = keeper(before)
    return [t for t in tasks.running(session_id) if not kept(t.after)]


def anchors(policy: PermissionPolicy, tasks: BackgroundTasks, session_id: str) -> list[str | None]:
    """Every anchor the session's side state holds now."""
    return [*policy.anchors(session_id).values(), *(t.after for t in tasks.running(session_id))]


async def rewind_side_state(
    rt: Runtime, conv: Conversation, tasks: BackgroundTasks, target_id: str
) -> tuple[list[str], list[BackgroundTaskView]]:
    """After a conversation restore of ``conv``'s session to ``target_id``: drop the answers and
    stop the background commands that came after it; returns the tools dropped and the commands
    stopped (as they are after the stop)."""
    sid = conv.session_id
    wanted = anchors(rt.policy, tasks, sid)
    before = await rt.gate.run(lambda e: strict_ancestors(e, target_id, wanted)) if wanted else set()
    revoked = rewound_answers(rt.policy, sid, before)
    for tool in revoked:
        await journal(rt, conv, PermissionAlwaysEvent(tool=tool, revoked=True, checkpoint_id=target_id))
    stopped = [await tasks.stop(t.handle, by="restore") for t in later_tasks(tasks, sid, before)]
    for task in stopped:
        log.info("session %s restored to %s: stopped %s (%s)", sid, target_id, task.handle, task.command)
    return revoked, [t.view() for t in stopped]
