"""What the model is told, at the next prompt, about restores done between two prompts.

Two notes, each a text block before the user's words (journaled with the prompt, told once; a
prompt withdrawn unanswered gives its notes back to the next one):

* after a **conversation** restore (files not restored): the files that changed since the
  restored point (:func:`restore_note`), so the model does not trust what it read then;
* after a **code-only** restore (conversation not moved): the files that now differ from what the
  model last saw (:func:`code_restore_note`): the ones the restore reverted, plus anything else
  that changed meanwhile. A restore then its undo leaves nothing to tell: no note.

Both start with ``[Retrace note:`` (the chat shows such blocks as system notes, not as the
user's text).
"""

from __future__ import annotations

from typing import Any

from retrace.agent.conversation import Conversation
from retrace.agent.runtime import Runtime, journal
from retrace.engine.errors import RetraceError
from retrace.engine.gate import EngineGate
from retrace.engine.models import FileChange, RestoreApplied, RestoreOutcome
from retrace.engine.store.events import ConversationHeadEvent

MAX_LISTED = 100
CODE_RESTORE = "codeRestore"
"""The ``reason`` of the ``conversationHead`` event a code-only restore journals (head unmoved)."""


def _listed(lines: list[str], changes: list[FileChange]) -> str:
    for change in changes[:MAX_LISTED]:
        approx = "~" if change.approximate else ""
        stat = (
            ""
            if change.binary or not change.counted
            else f" ({approx}+{change.additions} -{change.deletions})"
        )
        origin = f" (from {change.old_path})" if change.old_path else ""
        lines.append(f"- {change.status} {change.path}{origin}{stat}")
    if len(changes) > MAX_LISTED:
        lines.append(f"- ... and {len(changes) - MAX_LISTED} more")
    return "\n".join(lines) + "]"


def restore_note(checkpoint_id: str, changes: list[FileChange]) -> str:
    """The note after a conversation restore to ``checkpoint_id`` (files not restored)."""
    return _listed(
        [
            f"[Retrace note: the conversation was restored to checkpoint {checkpoint_id}, but the "
            "workspace files were not. These files changed since that point; read them before "
            "relying on earlier content:"
        ],
        changes,
    )


def code_restore_note(target_id: str, changes: list[FileChange]) -> str:
    """The note after a code-only restore to ``target_id`` (the conversation not moved)."""
    return _listed(
        [
            f"[Retrace note: the workspace files were restored to checkpoint {target_id}; the "
            "conversation was not. These files are no longer as you last saw them (reverted by "
            "the restore); read them again before relying on earlier content:"
        ],
        changes,
    )


async def _diff(gate: EngineGate, since: str) -> list[FileChange]:
    try:
        return await gate.call(gate.engine.diff, since, None)
    except RetraceError:  # the point is gone (collected): nothing reliable to tell
        return []


async def restore_notes(gate: EngineGate, conv: Conversation) -> list[dict[str, Any]]:
    """The note blocks the session's next prompt carries (empty: nothing to tell)."""
    blocks: list[dict[str, Any]] = []
    if conv.note_from is not None and (changes := await _diff(gate, conv.note_from)):
        blocks.append({"type": "text", "text": restore_note(conv.note_from, changes)})
    if conv.code_note is not None:
        since, target = conv.code_note
        if changes := await _diff(gate, since):
            blocks.append({"type": "text", "text": code_restore_note(target, changes)})
    return blocks


async def journal_code_restore(rt: Runtime, conv: Conversation, outcome: RestoreOutcome) -> None:
    """Journal that a code-only restore happened (the head stays): the next prompt tells the
    model. Several restores before one prompt: one note, from what the model saw last."""
    if not isinstance(outcome, RestoreApplied) or outcome.checkpoint is None or not conv.messages:
        return  # nothing restored, or a session with no conversation (a baseline's)
    restore = outcome.checkpoint
    since = conv.code_note[0] if conv.code_note is not None else restore.parent
    if since is None:
        return
    event = ConversationHeadEvent(
        head=conv.head,
        reason=CODE_RESTORE,
        checkpoint_id=restore.restored_from,
        note_from=conv.note_from,
        code_from=since,
    )
    await journal(rt, conv, event)
