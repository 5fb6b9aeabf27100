"""Words for one checkpoint row: a title saying what happened and a short gist of the change, so
150 edits of the same file can still be told apart ("‘x = 1’ → ‘x = 2’")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PureWindowsPath
from typing import Any

from retrace.app.timeline.facts import ToolFact
from retrace.engine.models import Checkpoint, FileChange

GIST_CHARS = 32
TITLE_CHARS = 72

KIND_TITLES: Mapping[str, str] = {
    "baseline": "Starting point",
    "tool": "Tool call",
    "external": "External changes",
    "safety": "Before restore",
    "restore": "Restored code",
    "manual": "Mark",
    "summary": "Conversation summary",
    "background": "Background command",
}


def clip(text: str, limit: int) -> str:
    """The first non-blank line of ``text``, at most ``limit`` characters (an ellipsis marks a cut)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


LABELLED_KINDS = frozenset({"tool", "manual", "summary", "background"})
"""Kinds whose label is written for people (a tool call's summary, a mark's name); the others'
labels are internal ("restore 2knhzdj6bc26") and the kind says more."""


def base_title(cp: Checkpoint) -> str:
    """What the checkpoint is, in a few words, without looking at other checkpoints."""
    label = clip(cp.label, TITLE_CHARS) if cp.kind in LABELLED_KINDS else ""
    if cp.kind == "tool" and cp.tool and label and cp.meta.get("agent") and not label.startswith(cp.tool):
        # Another agent's tool call: its label is the input summary alone ("notes.txt").
        return clip(f"{cp.tool}: {label}", TITLE_CHARS)
    return label or (cp.tool if cp.kind == "tool" and cp.tool else KIND_TITLES[cp.kind])


def _lines(count: int) -> str:
    return f"{count} line{'s' if count != 1 else ''}"


NOT_COUNTED = "lines not counted yet"
"""Shown instead of +/− numbers when a change's line counts were left out at commit time."""


def _counts(files: Sequence[FileChange]) -> str:
    """ "+10 −2" over ``files``, or :data:`NOT_COUNTED` when any of them has no counts yet
    (never zeros standing in for numbers nobody computed)."""
    if not all(f.counted for f in files):
        return NOT_COUNTED
    return f"+{sum(f.additions for f in files)} −{sum(f.deletions for f in files)}"


def file_stats(files: Sequence[FileChange]) -> str:
    """ "+3 −1" for one file, "3 files +10 −2" for several, "" when nothing changed."""
    if not files:
        return ""
    if any(f.binary for f in files) and len(files) == 1:
        return f"{files[0].status} (binary)"
    stats = _counts(files)
    return stats if len(files) == 1 else f"{len(files)} files {stats}"


def files_gist(files: Sequence[FileChange]) -> str:
    """Which files and how much: "scale.txt +1 −1", "a.py, b.py +4 −0", "5 files +10 −2"."""
    if not files:
        return "no file changes"
    if len(files) == 1:
        return f"{files[0].path} {file_stats(files)}"
    if len(files) <= 3:
        return f"{', '.join(f.path for f in files)} {_counts(files)}"
    return file_stats(files)


def first_difference(old: str, new: str) -> tuple[str, str]:
    """The first line that differs between two texts (common leading/trailing lines dropped)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    start = 0
    while start < min(len(old_lines), len(new_lines)) and old_lines[start] == new_lines[start]:
        start += 1
    rest_old, rest_new = old_lines[start:], new_lines[start:]
    while rest_old and rest_new and rest_old[-1] == rest_new[-1]:
        rest_old, rest_new = rest_old[:-1], rest_new[:-1]
    return "\n".join(rest_old), "\n".join(rest_new)


def _quoted(text: str) -> str:
    return f"‘{clip(text, GIST_CHARS)}’"


def edit_gist(tool_input: Mapping[str, Any]) -> str:
    old, new = tool_input.get("old_string"), tool_input.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return ""
    old_part, new_part = first_difference(old, new)
    if not old_part.strip() and not new_part.strip():
        return "whitespace only"
    if not old_part.strip():
        return f"+ {_quoted(new_part)}"
    if not new_part.strip():
        return f"− {_quoted(old_part)}"
    return f"{_quoted(old_part)} → {_quoted(new_part)}"


def tool_gist(cp: Checkpoint, tool: ToolFact | None) -> str:
    """The change a tool call made, in a few words."""
    stats = file_stats(cp.files)
    tool_input = tool.input if tool is not None else {}
    if cp.tool == "edit_file":
        gist = edit_gist(tool_input)
        return " · ".join(p for p in (gist, stats) if p)
    if cp.tool == "write_file":
        content = tool_input.get("content")
        added = len(cp.files) == 1 and cp.files[0].status == "added"
        if added and isinstance(content, str):
            return f"new file, {_lines(len(content.splitlines()))}: {_quoted(content)}"
        return stats or "unchanged"
    if cp.files:
        return files_gist(cp.files)
    return "no file changes" if cp.tool == "run_command" else ""


def folders_gist(meta: Mapping[str, object]) -> str:
    """The other folders of a multi-root workspace a tool call changed files in (``meta.folders``:
    root → that folder's checkpoint), by name; "" when none (or the stored value is no such map)."""
    folders = meta.get("folders")
    if not isinstance(folders, Mapping):
        return ""
    names = [PureWindowsPath(root).name for root in folders if isinstance(root, str) and root.strip("/\\")]
    return ", ".join(sorted(n for n in names if n))


def with_folders(gist: str, cp: Checkpoint) -> str:
    """A first-folder row's summary with the other folders its call changed ("changes in api"
    where this folder had none, else "… · also in api")."""
    names = folders_gist(cp.meta)
    if not names:
        return gist
    if cp.files:
        return f"{gist} · also in {names}" if gist else f"also in {names}"
    return f"changes in {names}"


def _restore_words(cp: Checkpoint, earlier: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    target = cp.restored_from or ""
    name, gist = earlier.get(target, ("", ""))
    what = f"‘{name}’" if name else (target[:12] or "an earlier checkpoint")
    gist = gist.split(" · ")[0]  # the change itself, not its line counts
    back = f"back to {gist}" if gist and gist != "no file changes" else ""
    files = files_gist(cp.files) if cp.files else ""
    return f"Restored code to {what}", " · ".join(p for p in (back, files) if p)


def hunk_restore(cp: Checkpoint) -> tuple[str, str] | None:
    """(title, summary) of a one-hunk restore (``meta.hunk``), else ``None``."""
    hunk = cp.meta.get("hunk") if cp.kind == "restore" else None
    if not isinstance(hunk, dict):
        return None
    return f"Restored a hunk of {hunk.get('path', '')}", f"line {hunk.get('line', '?')}"


def describe(
    cp: Checkpoint, tool: ToolFact | None, earlier: Mapping[str, tuple[str, str]]
) -> tuple[str, str]:
    """(title, summary) of a row. ``earlier``: checkpoint id → (title, summary) of the rows before
    it, to say what a restore went back to."""
    if cp.kind == "tool":
        return base_title(cp), with_folders(tool_gist(cp, tool), cp)
    if cp.kind == "restore":
        return hunk_restore(cp) or _restore_words(cp, earlier)
    if cp.kind == "baseline":
        count = len(cp.files)
        return base_title(cp), f"{count} file{'s' if count != 1 else ''}" if count else ""
    if cp.kind == "safety":
        return KIND_TITLES["safety"], files_gist(cp.files) if cp.files else "the workspace as it was"
    if cp.kind in ("external", "background"):
        return base_title(cp), files_gist(cp.files)
    return base_title(cp), file_stats(cp.files)
