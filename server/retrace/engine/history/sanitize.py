"""The workspace-path rule applied to what a journal line holds besides its delta.

A checkpoint line names paths in its file changes, its unrecoverable list and its editor state
(open editors, unsaved buffers a restore puts back into the editor); a ``restoreIntent`` names
the paths an interrupted restore's recovery touches. Each must pass
:func:`~retrace.engine.workspace.stored_rel`; one that does not is dropped (reported by the
caller as damage), so no restore, recovery or editor request is ever built from it. Pure.
"""

from __future__ import annotations

from typing import Any

from retrace.engine.models import Checkpoint, Unrecoverable
from retrace.engine.store.events import RestoreIntentEvent, model_of
from retrace.engine.workspace import EscapeError, stored_rel


def _problem(path: object) -> str | None:
    try:
        stored_rel(path)
    except EscapeError as exc:
        return str(exc)
    return None


def _shown(path: object) -> str:
    """A bad path as it may be displayed (``repr``: control characters and NUL escaped)."""
    return path if isinstance(path, str) and path.isprintable() else repr(path)


def _editor_state(state: dict[str, Any], bad: list[tuple[str, str]]) -> dict[str, Any]:
    """``state`` without the editors and buffers whose ``path`` fails the rule."""
    out = dict(state)
    for key, value in state.items():
        if isinstance(value, list):
            kept = []
            for item in value:
                problem = _problem(item["path"]) if isinstance(item, dict) and "path" in item else None
                if problem is None:
                    kept.append(item)
                else:
                    bad.append((_shown(item["path"]), f"editor state: {problem}"))
            out[key] = kept
        elif isinstance(value, dict) and "path" in value:
            problem = _problem(value["path"])
            if problem is not None:
                bad.append((_shown(value["path"]), f"editor state: {problem}"))
                out[key] = None
    return out


def sanitized(cp: Checkpoint, bad: list[tuple[str, str]]) -> tuple[Checkpoint, list[tuple[str, str]]]:
    """``cp`` with every path that fails the rule dropped, given the ``(path, why)`` its delta
    already lost (``bad``); the checkpoint then lists them as unrecoverable (``partial``)."""
    bad = list(bad)
    known = {p for p, _ in bad}
    files = []
    for f in cp.files:
        problem = _problem(f.path) or (_problem(f.old_path) if f.old_path is not None else None)
        if problem is None:
            files.append(f)
        elif f.path not in known:  # a path its delta already lost is reported once
            bad.append((_shown(f.path), f"file change: {problem}"))
    update: dict[str, Any] = {}
    if len(files) != len(cp.files):
        update["files"] = files
    if cp.editor_state:
        before = len(bad)
        state = _editor_state(cp.editor_state, bad)
        if len(bad) != before:
            update["editor_state"] = state
    if not bad:
        return cp, bad
    update["unrecoverable"] = [
        *cp.unrecoverable,
        *(Unrecoverable(path=_shown(p), reason=f"damaged journal entry, ignored: {why}") for p, why in bad),
    ]
    if cp.recoverability == "full":
        update["recoverability"] = "partial"
    return cp.model_copy(update=update), bad


def bad_restore_paths(event: dict[str, Any]) -> list[tuple[str, str]]:
    """``(path, why)`` of each path of a ``restoreIntent`` event that fails the rule."""
    if model_of(event) is not RestoreIntentEvent or not isinstance(event.get("paths"), list):
        return []
    return [
        (_shown(p), f"restore intent: {problem}")
        for p in event["paths"]
        if (problem := _problem(p)) is not None
    ]
