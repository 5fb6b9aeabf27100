"""What the user reviews before approving a tool call: the complete text, and an honest preview.

A permission prompt must never let the user approve something they could not see: the
``text`` of a :class:`ReviewDetails` is the exact, complete command (or file content, or edit),
and the ``summary`` (what a prompt shows inline) either IS that text or ends with a visible
marker saying how much more there is (``… 1,234 more characters — Show all``). A command is
shown whole up to :data:`COMMAND_MAX_CHARS`, cut into the commands it runs (``parts``, with a
``notice`` such as ``This command runs 2 commands in 2 parts.``). Clients render
these fields and offer the complete ``text`` in one click; they never shorten it themselves.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from retrace.agent.command_parts import CommandPart, notice, split_command
from retrace.agent.mcp.config import is_mcp_tool
from retrace.agent.tools.base import safe_text
from retrace.camel import CamelModel

ReviewKind = Literal["command", "write", "edit", "other"]

SUMMARY_MAX_CHARS = 300
"""At most this many characters of the text are shown inline."""
SUMMARY_MAX_LINES = 8
"""At most this many lines of the text are shown inline."""
COMMAND_MAX_CHARS = 10_000
"""A command is shown inline whole up to this many characters (the prompt scrolls), with no line
limit: a command's tail is where a second command hides."""
ONE_LINE_MAX_CHARS = 200
"""The one-line form (logs, notifications) keeps at most this many characters of the text."""


class ReviewDetails(CamelModel):
    """The complete thing to approve, plus what to show inline."""

    kind: ReviewKind
    title: str
    """E.g. ``Run a command``, ``Write src/app.py (120 lines)``."""
    path: str | None = None
    """The file a write or edit targets."""
    text: str
    """The COMPLETE command, file content or edit (old and new text); never shortened."""
    summary: str
    """What the prompt shows inline as one text: ``preview``, plus ``marker`` on its own line."""
    preview: str
    """The head of ``text`` shown inline (all of it when nothing is cut)."""
    marker: str | None = None
    """When cut: the line saying how much is hidden, e.g. ``… 1,234 more characters — Show all``."""
    truncated: bool
    """``summary`` shows only part of ``text`` (the marker says so; ``text`` has it all)."""
    shown_chars: int
    """Characters of ``text`` that ``summary`` shows."""
    hidden_chars: int
    """Characters of ``text`` that ``summary`` does not show."""
    language: str | None = None
    """Language id for showing ``text`` in an editor (``shellscript``, ``diff``), when known."""
    parts: list[CommandPart] | None = None
    """A command's ``preview`` cut at its control operators, with substitutions and redirections
    marked (:mod:`retrace.agent.command_parts`); clients show each part on its own line."""
    notice: str | None = None
    """For a compound command, the line a prompt shows above it (``This command runs 3 commands
    in 3 parts; redirects: > out.txt.``), counted over the whole ``text``."""


def marker(hidden_chars: int, hidden_lines: int) -> str:
    """The visible line that says something was left out, e.g. ``… 1,234 more characters — Show all``."""
    lines = f"{hidden_lines:,} more line{'s' if hidden_lines != 1 else ''}, " if hidden_lines else ""
    chars = f"{hidden_chars:,} more character{'s' if hidden_chars != 1 else ''}"
    return f"… {lines}{chars} — Show all"


def preview(
    text: str, max_chars: int = SUMMARY_MAX_CHARS, max_lines: int | None = SUMMARY_MAX_LINES
) -> tuple[str, str | None]:
    """(the head of ``text`` shown inline, the marker line when anything is cut). The head is cut
    at a line or a character limit."""
    head = text[:max_chars]
    lines = head.split("\n")
    if max_lines is not None and len(lines) > max_lines:
        head = "\n".join(lines[:max_lines])
    if len(head) == len(text):
        return text, None
    rest = text[len(head) :]
    hidden_lines = 0
    if "\n" in text:
        hidden_lines = rest.count("\n") - rest.endswith("\n") + (not rest.startswith("\n"))
    return head, marker(len(rest), hidden_lines)


def one_line(prefix: str, text: str, limit: int = ONE_LINE_MAX_CHARS) -> str:
    """``prefix: text`` on one line; a cut (or a dropped newline) is said, never silent."""
    first = text.split("\n", 1)[0]
    head = first[:limit]
    hidden = len(text) - len(head)
    detail = head if not hidden else f"{head} … ({hidden:,} more characters)"
    return f"{prefix}: {detail}" if text else prefix


def _lines(text: str) -> list[str]:
    """Lines without terminators; a final newline does not start another line."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def _text_of(tool: str, tool_input: dict[str, Any]) -> tuple[ReviewKind, str, str | None, str, str | None]:
    """(kind, title, path, complete text, language) for one tool call."""
    path = tool_input.get("path")
    path = safe_text(path) if isinstance(path, str) else None
    if tool == "run_command":
        command = tool_input.get("command")
        text = safe_text(command) if isinstance(command, str) else ""
        timeout = tool_input.get("timeout_s")
        title = "Run a command" + (f" (timeout {timeout:g} s)" if isinstance(timeout, int | float) else "")
        return "command", title, None, text, "shellscript"
    if tool == "write_file":
        content = tool_input.get("content")
        text = safe_text(content) if isinstance(content, str) else ""
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        title = f"Write {path} ({lines:,} line{'s' if lines != 1 else ''}, {len(text):,} characters)"
        return "write", title, path, text, None
    if tool == "edit_file":
        old, new = tool_input.get("old_string"), tool_input.get("new_string")
        old_text = safe_text(old) if isinstance(old, str) else ""
        new_text = safe_text(new) if isinstance(new, str) else ""
        every = " (every occurrence)" if tool_input.get("replace_all") is True else ""
        body = "".join(f"-{line}\n" for line in _lines(old_text))
        body += "".join(f"+{line}\n" for line in _lines(new_text))
        return "edit", f"Edit {path}: replace{every}", path, body, "diff"
    if is_mcp_tool(tool):
        text = safe_text(json.dumps(tool_input, ensure_ascii=False, indent=2))
        return "other", f"Call the MCP tool {tool}", path, text, "json"
    text = safe_text(str(tool_input.get("command") or tool_input.get("path") or ""))
    return "other", tool, path, text, None


def review_for(tool: str, tool_input: dict[str, Any]) -> ReviewDetails:
    """The review of one tool call: complete text, inline summary, and whether it was cut."""
    kind, title, path, text, language = _text_of(tool, tool_input)
    parts: list[CommandPart] | None = None
    said: str | None = None
    if kind == "command":
        head, cut = preview(text, COMMAND_MAX_CHARS, None)
        whole = split_command(text)
        parts = whole.parts if cut is None else split_command(head).parts
        said = notice(whole)
    else:
        head, cut = preview(text)
    return ReviewDetails(
        kind=kind,
        title=title,
        path=path,
        text=text,
        summary=head if cut is None else f"{head}\n{cut}",
        preview=head,
        marker=cut,
        truncated=cut is not None,
        shown_chars=len(head),
        hidden_chars=len(text) - len(head),
        language=language,
        parts=parts,
        notice=said,
    )
