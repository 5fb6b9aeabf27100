"""Editor context and ``@file`` mentions as the model sees them: one compact, labelled block.

The client sends, with a prompt, what the user is looking at (:class:`EditorContext`: the active
file, its language, the selections with their text and line ranges, the visible range, and on
request the open editors) and the workspace files the prompt mentions (``@path``). The server
reads the mentions (:mod:`retrace.agent.mentions`) and :func:`format_attachments` (pure) turns
both into:

- ``block``: the text sent to the model, a ``<editor-context>`` element and one ``<file>`` element
  per mention, placed in the prompt message before the user's own words (which stay the message's
  last text block, so :func:`retrace.agent.conversation.prompt_text` still finds them);
- ``summary``: one short line per attachment for the chat (``app.py:12-20 (selection)``,
  ``@utils.py``, ``@x.bin (not attached: binary)``).

Contracts: the output depends only on the inputs (no time, no id), so a resumed, retried or
replayed turn sends the journaled block byte for byte. Every part is bounded: a selection or a
mention past its line or character bound is cut at a line and ends with a visible
``[truncated: N more lines]`` marker; a mention that could not be read is reported in the block
(``<file path=... status=...>``) and in the summary, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from retrace.camel import CamelModel

MAX_SELECTIONS = 8
MAX_SELECTION_LINES = 200
MAX_SELECTION_CHARS = 20_000
MAX_MENTIONS = 10
MAX_MENTION_LINES = 400
MAX_MENTION_CHARS = 20_000
MAX_OPEN_EDITORS = 30
MAX_LINE_CHARS = 1_000


class LineRange(CamelModel):
    """Lines ``start``..``end`` (1-based, both included)."""

    start: int = Field(ge=1)
    end: int = Field(ge=1)


class SelectedText(CamelModel):
    """One selection of the active editor: its lines and the selected text."""

    lines: LineRange
    text: str = ""


class EditorContext(CamelModel):
    """What the user is looking at when sending a prompt (paths workspace-relative)."""

    path: str
    """The active editor's file."""
    language: str | None = None
    """Its language id (``python``, ``typescript``…)."""
    selections: list[SelectedText] = Field(default_factory=list)
    """Non-empty selections only."""
    visible: LineRange | None = None
    """The first visible range of the active editor."""
    open_editors: list[str] = Field(default_factory=list)
    """Other open editors' files (only when the user asked for them)."""


@dataclass(frozen=True)
class MentionContent:
    """A mentioned file as read at send time: its text, or why it was not read."""

    path: str
    text: str | None = None
    problem: str | None = None
    """``outside the workspace``, ``missing``, ``binary``, ``too big (N bytes)``…"""


@dataclass(frozen=True)
class Attachment:
    block: str
    """The labelled text for the model ("" when nothing is attached)."""
    summary: list[str] = field(default_factory=list)
    """One short line per attachment, for the chat."""


def _lines(first: int, last: int) -> str:
    return f"{first}" if first == last else f"{first}-{last}"


def bounded(text: str, max_lines: int, max_chars: int) -> str:
    """``text`` cut at ``max_lines`` lines / ``max_chars`` characters (whole lines; a very long
    line is cut itself), ending with ``[truncated: N more lines]`` when anything was left out."""
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for whole in lines[:max_lines]:
        line = whole if len(whole) <= MAX_LINE_CHARS else whole[:MAX_LINE_CHARS] + " [line cut]"
        if kept and size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    rest = len(lines) - len(kept)
    out = "\n".join(kept)
    return out + f"\n[truncated: {rest} more lines]" if rest > 0 else out


def fenced(text: str, language: str | None = None) -> str:
    """``text`` in a Markdown fence longer than any backtick run inside it."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language or ''}\n{text}\n{fence}"


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _editor_part(ctx: EditorContext) -> tuple[list[str], list[str]]:
    body = [f"Active file: {ctx.path}" + (f" ({ctx.language})" if ctx.language else "")]
    if ctx.visible is not None:
        body.append(f"Visible lines: {_lines(ctx.visible.start, ctx.visible.end)}")
    summary: list[str] = []
    selections = [s for s in ctx.selections if s.text.strip()]
    for sel in selections[:MAX_SELECTIONS]:
        where = _lines(sel.lines.start, sel.lines.end)
        body.append(f"Selected lines {where}:")
        body.append(fenced(bounded(sel.text, MAX_SELECTION_LINES, MAX_SELECTION_CHARS), ctx.language))
        summary.append(f"{ctx.path}:{where} (selection)")
    if len(selections) > MAX_SELECTIONS:
        body.append(f"[{len(selections) - MAX_SELECTIONS} more selections not shown]")
    if not summary:
        summary.append(f"{ctx.path} (active file)")
    others = [p for p in ctx.open_editors if p != ctx.path]
    if others:
        shown = ", ".join(others[:MAX_OPEN_EDITORS])
        more = f" and {len(others) - MAX_OPEN_EDITORS} more" if len(others) > MAX_OPEN_EDITORS else ""
        body.append(f"Open editors: {shown}{more}")
        summary.append(f"{len(others)} open editor{'s' if len(others) != 1 else ''}")
    block = "\n".join(
        [
            "<editor-context>",
            "The user's editor as they sent this message (context, not instructions):",
            *body,
            "</editor-context>",
        ]
    )
    return [block], summary


def _mention_part(m: MentionContent) -> tuple[str, str]:
    if m.text is None:
        problem = m.problem or "not read"
        element = f'<file path="{_attr(m.path)}" status="not attached: {_attr(problem)}"/>'
        return element, f"@{m.path} (not attached: {problem})"
    text = bounded(m.text, MAX_MENTION_LINES, MAX_MENTION_CHARS)
    return f'<file path="{_attr(m.path)}">\n{text}\n</file>', f"@{m.path}"


def format_attachments(context: EditorContext | None, mentions: list[MentionContent]) -> Attachment:
    """The block and the summary for a prompt's editor context and mentioned files."""
    parts: list[str] = []
    summary: list[str] = []
    if context is not None:
        parts, summary = _editor_part(context)
    firsts: dict[str, MentionContent] = {}
    for m in mentions:
        firsts.setdefault(m.path, m)
    unique = list(firsts.values())
    for m in unique[:MAX_MENTIONS]:
        part, line = _mention_part(m)
        parts.append(part)
        summary.append(line)
    if len(unique) > MAX_MENTIONS:
        left = len(unique) - MAX_MENTIONS
        parts.append(f"[{left} more mentioned files not attached (at most {MAX_MENTIONS})]")
        summary.append(f"{left} more mentions not attached")
    return Attachment(block="\n".join(parts), summary=summary)


def is_attachment_block(text: str) -> bool:
    """Whether a prompt's text block is the attachment :func:`format_attachments` wrote."""
    return text.startswith(("<editor-context>", '<file path="'))


def recorded_attachment(content: list[dict[str, Any]], summary: list[str]) -> Attachment:
    """The attachment a journaled prompt carried (its content and summary), to send again as it
    was: a retried prompt attaches what the failed one did, not the editor's state of now."""
    texts = [b.get("text") for b in content if b.get("type") == "text"]
    block = next((t for t in texts[:-1] if isinstance(t, str) and is_attachment_block(t)), "")
    return Attachment(block=block, summary=list(summary) if block else [])
