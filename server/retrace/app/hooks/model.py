"""What one hook call means, whatever agent sent it: :class:`HookEvent` (pure data), the errors
of a hook event that cannot be applied, and THE rule naming the Retrace session of an external
agent's session (:func:`session_id_for`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

from retrace.engine.errors import RetraceError

HookKind = Literal["sessionStart", "prompt", "preTool", "postTool", "stop", "sessionEnd", "ignored"]
"""``prompt``: a turn starts; ``preTool``: a tool is about to run (what others changed since is
recorded first); ``postTool``: a tool ran (its checkpoint); ``stop``: the turn ended;
``ignored``: an event Retrace has no use for (notifications, compaction, ...)."""

EXTERNAL_ID_MAX = 256
"""The longest external session id kept (the journal's ``externalSessionId`` limit)."""
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


class HookInputError(RetraceError):
    """The hook's input is not an event of this agent Retrace can apply (one line saying why)."""

    code = "hookInput"


class HookRefused(RetraceError):  # noqa: N818 (like the engine's refusals)
    """The event is well formed but does not belong here (another workspace)."""

    code = "hookRefused"


@dataclass(frozen=True)
class HookEvent:
    """One hook call of an external agent, as the service applies it.

    ``changed_paths``: for a tool that writes files, the path(s) it names (as the agent gave
    them: absolute, or relative to ``cwd``), ``()`` for a tool known to change nothing, ``None``
    for a shell or unknown tool (the engine detects what changed). ``summary``: one line
    describing the tool's input, secrets already redacted. ``warnings``: fields that were
    present but unusable (ignored, never fatal), for the log."""

    agent: str
    kind: HookKind
    hook_name: str
    external_session_id: str = ""
    cwd: str | None = None
    transcript_path: str | None = None
    prompt: str | None = None
    tool: str | None = None
    tool_use_id: str | None = None
    summary: str = ""
    changed_paths: tuple[str, ...] | None = None
    reason: str = ""
    failed: bool = False
    warnings: tuple[str, ...] = field(default=())


def session_id_for(agent: str, external_id: str) -> str:
    """The Retrace session recording ``agent``'s session ``external_id``: ``<agent>-<id>`` when
    the id is plain (``[A-Za-z0-9_-]{1,100}``), else ``<agent>-<sha256(id)[:32]>``."""
    if _PLAIN_ID.fullmatch(external_id):
        return f"{agent}-{external_id}"
    digest = hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{agent}-{digest}"
