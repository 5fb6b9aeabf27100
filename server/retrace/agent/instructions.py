"""Project instructions: ``AGENTS.md`` and ``CLAUDE.md`` files the model is shown.

Which files: those at the workspace root, and those in every folder that holds (or is a parent
of) a path the agent touched — read, wrote, listed or changed — up to the root. They are read
fresh for every model request, and the section they make is a pure function of the files'
contents and the touched folders (ordered root first, then by depth and path), so an unchanged
set gives byte-identical text (the system prompt stays cacheable).

Safety: every folder is opened one component at a time without following a symlink
(:class:`retrace.engine.workspace.DirTree`); a folder reached through a link is skipped. An
instructions file that is itself a symlink is read only when its target lies inside the
workspace, and then through the same no-follow resolution (a target outside is never opened).
Only regular, text (:mod:`retrace.text`) files count; one file seen under two names (a
``CLAUDE.md`` linked to ``AGENTS.md``) is included once.

Caps: :data:`MAX_FILE_CHARS` a file (longer ones are cut, marked) and :data:`MAX_TOTAL_CHARS`
in all (files past it are left out, named); the section states both.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from retrace.engine.errors import RetraceError
from retrace.engine.workspace import DirTree, normalize_rel
from retrace.text import decode_text

log = logging.getLogger(__name__)

NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_FILE_CHARS = 12_000
MAX_TOTAL_CHARS = 32_000
MAX_FOLDERS = 1000
"""Folders looked in per request at most (the shallowest first): a command that changed files
in thousands of folders must not make every request scan them all."""


def folders_of(workspace: Path, touched: Iterable[str]) -> list[str]:
    """The workspace-relative folders whose instructions apply ("" = the root): the root, and
    each touched path and its parents (a file's own name is tried too; it simply holds none),
    root first, then by depth and name."""
    folders = {""}
    for raw in touched:
        try:
            rel = normalize_rel(raw, workspace)
        except RetraceError:
            continue  # outside the workspace, "..", or the root itself
        parts = rel.split("/")
        folders.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return sorted(folders, key=lambda f: (f.count("/") + bool(f), f))[:MAX_FOLDERS]


def _read(tree: DirTree, root: str, rel: str) -> tuple[str, tuple[int, int]] | None:
    """(text, file identity) of the instructions file ``rel``; ``None`` when it is missing, not
    a regular text file, or reached through a symlink leading out of the workspace."""
    try:
        st = tree.lstat(rel)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(Path(root) / rel)
            rel = normalize_rel(target, root)  # outside: EscapeError
        fd_dir, name = tree.parent(rel)
        fd = tree.fs.open_file(fd_dir, name)
    except (RetraceError, OSError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_FILE_CHARS * 4 + 4)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = _decode_prefix(data)
    return (text, (st.st_dev, st.st_ino)) if text is not None and text.strip() else None


def _decode_prefix(data: bytes) -> str | None:
    """The text of ``data`` (a file's prefix: a multi-byte character cut at its end is dropped);
    ``None`` when it is binary."""
    for cut in range(4):
        text = decode_text(data[: len(data) - cut] if cut else data)
        if text is not None:
            return text
    return None


def _collect(workspace: Path, folders: list[str]) -> list[tuple[str, str]]:
    """(relative path, text) of each instructions file of ``folders``, in order, once each."""
    root = os.path.realpath(workspace)
    found: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    try:
        tree = DirTree(root)
    except OSError:
        return found
    with tree:
        for folder in folders:
            for name in NAMES:
                rel = f"{folder}/{name}" if folder else name
                got = _read(tree, root, rel)
                if got is None or got[1] in seen:
                    continue
                seen.add(got[1])
                found.append((rel, got[0]))
    return found


def project_instructions(workspace: Path, touched: Iterable[str]) -> str:
    """The labelled section of the system prompt holding the project's instructions ("" when
    there are none)."""
    files = _collect(workspace, folders_of(workspace, touched))
    if not files:
        return ""
    parts = [
        "# Project instructions\n"
        f"The project's own instructions for agents (AGENTS.md / CLAUDE.md files; up to "
        f"{MAX_FILE_CHARS:,} characters a file and {MAX_TOTAL_CHARS:,} in all). Follow them; a "
        "file in a folder applies to that folder and below, and a deeper file wins over a "
        "shallower one where they disagree. The user's direct requests win over both."
    ]
    total = 0
    left_out: list[str] = []
    for rel, text in files:
        body = text.strip()
        if len(body) > MAX_FILE_CHARS:
            body = body[:MAX_FILE_CHARS] + f"\n[cut at {MAX_FILE_CHARS:,} characters]"
        if total + len(body) > MAX_TOTAL_CHARS:
            left_out.append(rel)
            continue
        total += len(body)
        parts.append(f'<instructions file="{rel}">\n{body}\n</instructions>')
    if left_out:
        parts.append(f"[left out, over the {MAX_TOTAL_CHARS:,}-character cap: {', '.join(left_out)}]")
    return "\n\n".join(parts)
