"""Reading the files a prompt mentions (``@path``), at send time and bounded.

A mention is resolved by the file tools' one rule for "inside the workspace"
(:func:`retrace.agent.tools.paths.resolve`: no ``..`` escape, no symlink leading out) and judged
text by :mod:`retrace.text`. A mention outside the workspace, missing, not a regular file or
bigger than :data:`MAX_MENTION_BYTES` is never read: it comes back with its ``problem``, which the
prompt's attachment reports to the model and to the user.
"""

from __future__ import annotations

from pathlib import Path

from retrace.agent.editor_context import MentionContent
from retrace.agent.tools.base import ToolContext, ToolError
from retrace.agent.tools.paths import read_regular, resolve
from retrace.engine.config import EngineConfig
from retrace.text import decode_text

MAX_MENTION_BYTES = 256 * 1024


def read_mention(workspace: Path, config: EngineConfig, raw: str) -> MentionContent:
    """The mentioned file's text, or why it is not attached (never raises for a bad path)."""
    ctx = ToolContext(workspace=workspace, engine_config=config)
    try:
        real, rel = resolve(ctx, raw)
    except ToolError as e:
        refused = "outside the workspace" if "outside the workspace" in str(e) else str(e)
        return MentionContent(path=raw, problem=refused)
    problem = _unreadable(real)
    if problem is not None:
        return MentionContent(path=rel, problem=problem)
    try:
        data = read_regular(real, rel, MAX_MENTION_BYTES + 1)
    except ToolError as e:
        return MentionContent(path=rel, problem=str(e))
    text = decode_text(data)
    if text is None:
        return MentionContent(path=rel, problem="binary")
    return MentionContent(path=rel, text=text)


def _unreadable(real: Path) -> str | None:
    """Why ``real`` is not read at all (``None``: it may be read)."""
    try:
        st = real.stat()
    except OSError:
        return "missing"
    if real.is_dir():
        return "a folder"
    if st.st_size > MAX_MENTION_BYTES:
        return f"too big ({st.st_size} bytes)"
    return None


def read_mentions(workspace: Path, config: EngineConfig, paths: list[str]) -> list[MentionContent]:
    return [read_mention(workspace, config, p) for p in paths]
