"""A restore point at every prompt: "before prompt N" and "the end of turn N", resolved to the code
checkpoint and the conversation head in force then (pure, table-tested).

* **before** a prompt: the code is the store's head when the prompt was sent (the ``turn``
  event's ``headCheckpoint``), the conversation head is the prompt's parent — exact even for a
  turn that made no checkpoint. A journal written before the head was recorded falls back to the
  parent of the turn's first checkpoint, else the last checkpoint of an earlier turn
  (``exact: False``).
* the **end** of a turn: the conversation head is the turn's last message (its final answer is
  kept; the ``restoreResults`` a later restore appended under the turn's id are not the turn's),
  the code is the turn's last checkpoint (its tool calls' and turn-end checkpoints), else the code
  before its prompt (a turn with no tool call changed nothing). A turn that ended with no reply
  (withdrawn) has no end to restore to.

The prompt is named by its message id or its turn id. What goes back into the chat's input after
a conversation restore is :func:`restored_away_prompt`: the first prompt of the old branch that
the new head leaves out, in the user's own words (``prompt_text``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from retrace.agent.conversation import Conversation, StoredMessage, prompt_text
from retrace.engine.errors import RetraceError

Point = Literal["before", "end"]


class PromptPointUnknown(RetraceError):  # noqa: N818 (contract names)
    """The prompt is not in the session, or no restore point was recorded for it."""

    code = "promptPointUnknown"


@dataclass(frozen=True)
class CheckpointRef:
    """What resolution reads of one of the session's checkpoints (creation order)."""

    id: str
    parent: str | None
    turn_id: str | None


@dataclass(frozen=True)
class PromptPoint:
    turn_id: str | None
    prompt_id: str
    prompt_text: str
    checkpoint: str
    """The code target."""
    head: str | None
    """The conversation head to move to (``None``: before the first message)."""
    exact: bool
    """``False``: the code target was derived (an old journal without ``headCheckpoint``)."""


def find_prompt(conv: Conversation, ref: str) -> StoredMessage:
    """The prompt message with id ``ref``, else the prompt of turn ``ref``."""
    message = conv.messages.get(ref)
    if message is not None and message.kind == "prompt" and message.role == "user":
        return message
    for candidate in conv.messages.values():
        if candidate.kind == "prompt" and candidate.role == "user" and candidate.turn_id == ref:
            return candidate
    raise PromptPointUnknown(f"no prompt {ref[:100]!r} in session {conv.session_id}")


def code_before(
    conv: Conversation, turn_id: str | None, checkpoints: Sequence[CheckpointRef]
) -> tuple[str, bool]:
    """The code in force when turn ``turn_id``'s prompt was sent, and whether it was recorded."""
    recorded = conv.turn_heads.get(turn_id or "")
    if recorded is not None:
        return recorded, True
    first = next((c for c in checkpoints if turn_id is not None and c.turn_id == turn_id), None)
    if first is not None and first.parent is not None:
        return first.parent, False
    turns = list(conv.turn_heads)
    earlier = set(turns[: turns.index(turn_id)]) if turn_id in turns else set()
    last = next((c for c in reversed(checkpoints) if c.turn_id in earlier), None)
    if last is None:
        raise PromptPointUnknown(f"no restore point was recorded before turn {turn_id}")
    return last.id, False


def turn_end(conv: Conversation, prompt: StoredMessage) -> str:
    """The last message of the prompt's turn (its final answer)."""
    own = [
        m
        for m in conv.messages.values()
        if m.turn_id is not None and m.turn_id == prompt.turn_id and m.kind != "restoreResults"
    ]
    last = own[-1] if own else prompt
    if last.id == prompt.id or any(w.message_id == prompt.id for w in conv.withdrawn):
        raise PromptPointUnknown(
            f"turn {prompt.turn_id} ended without a reply: restore to before its prompt instead"
        )
    return last.id


def resolve(conv: Conversation, ref: str, point: Point, checkpoints: Sequence[CheckpointRef]) -> PromptPoint:
    """Where "before prompt ``ref``" or "the end of its turn" is (``checkpoints``: the session's,
    in creation order)."""
    prompt = find_prompt(conv, ref)
    before, exact = code_before(conv, prompt.turn_id, checkpoints)
    if point == "before":
        return PromptPoint(prompt.turn_id, prompt.id, prompt_text(prompt), before, prompt.parent, exact)
    head = turn_end(conv, prompt)
    last = next(
        (c for c in reversed(checkpoints) if c.turn_id is not None and c.turn_id == prompt.turn_id), None
    )
    code, exact = (last.id, True) if last is not None else (before, exact)
    return PromptPoint(prompt.turn_id, prompt.id, prompt_text(prompt), code, head, exact)


def restored_away_prompt(conv: Conversation, old_head: str | None, new_head: str | None) -> str | None:
    """The user's words of the first prompt on the branch ending at ``old_head`` that the branch
    ending at ``new_head`` leaves out (``None``: the restore left out no prompt)."""
    kept = {m.id for m in conv.chain(new_head)} if new_head is not None else set()
    for message in conv.chain(old_head) if old_head is not None else []:
        if message.id not in kept and message.kind == "prompt" and message.role == "user":
            return prompt_text(message)
    return None
