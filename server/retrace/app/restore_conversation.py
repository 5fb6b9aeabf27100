"""The conversation half of a restore, for every front end that moves one: the session's head
goes to the checkpoint's cursor, or to an explicit message (a prompt's restore point,
:mod:`retrace.app.prompt_points`), and the answer names the prompt the move left out so the chat
can offer it again (:func:`~retrace.app.prompt_points.restored_away_prompt`, the one owner).
"""

from __future__ import annotations

from dataclasses import dataclass

from retrace.agent.session import AgentService, MessageAt, SessionRestored
from retrace.app.prompt_points import restored_away_prompt


@dataclass(frozen=True)
class ConversationTarget:
    """Whose conversation moves, and where to (``at``: ``None`` → the checkpoint's own cursor)."""

    session_id: str
    at: MessageAt | None = None


@dataclass(frozen=True)
class ConversationMoved:
    restored: SessionRestored
    restored_prompt: str | None
    """The first prompt the move left out, in the user's words (``None``: none)."""


async def move_conversation(
    agent: AgentService, target: ConversationTarget, checkpoint_id: str
) -> ConversationMoved:
    """Move ``target``'s conversation (and terminal state) to ``checkpoint_id``'s."""
    conv = await agent.folded(target.session_id, create=True)
    old_head = conv.head
    restored = await agent.restore_session(target.session_id, checkpoint_id, target.at)
    return ConversationMoved(restored, restored_away_prompt(conv, old_head, restored.view.head))
