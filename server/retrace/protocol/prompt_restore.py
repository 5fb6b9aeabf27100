"""``retrace/restore/toPrompt``: restore to before a chat prompt, or to the end of its turn.

The params are a restore's (:class:`~retrace.protocol.models.RestoreParams`: mode, dry run,
conflict resolutions, background commands, other agents) with the prompt instead of a checkpoint:
the server resolves the code checkpoint and the conversation head (:mod:`retrace.app.prompt_points`),
so the client never guesses them.
"""

from __future__ import annotations

from typing import Literal

from retrace.protocol.models import RestoreParams, RestoreResult


class RestoreToPromptParams(RestoreParams):
    id: str = ""
    """Ignored: the server resolves the checkpoint from ``prompt``."""
    session_id: str
    prompt: str
    """The prompt's message id, or its turn id."""
    point: Literal["before", "end"] = "before"
    """``before`` the prompt was sent, or the ``end`` of its turn (its final answer kept)."""


class RestoreToPromptResult(RestoreResult):
    checkpoint: str
    """The code target the prompt's restore point resolved to."""
    turn_id: str | None
    prompt_text: str
    """The prompt's own words (what "Edit and resend" starts from)."""
    exact: bool
    """``False``: the code target was derived (a session recorded before prompts had their own
    restore point)."""
