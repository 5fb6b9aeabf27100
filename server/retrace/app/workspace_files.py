"""Which workspace files match what the user typed after ``@`` in the chat input.

The candidates are the paths of the head checkpoint's manifest: the engine's own record of the
workspace, which already leaves out ignored files (``.gitignore``, tool folders) — no new scan and
no second ignore rule. :func:`rank_paths` (pure, table-tested) orders them: every query character
must appear in order in the path (case-insensitive); a match in the file name beats one spread over
folders, then a name that starts with the query, then contiguous matches, then shorter paths, then
the path itself (so the order is deterministic).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from retrace.engine.engine import Engine
from retrace.protocol.workspace_files import WorkspaceFilesParams, WorkspaceFilesResult


def _subsequence_span(text: str, query: str) -> int | None:
    """Length of the first in-order match of ``query`` in ``text`` (``None``: no match)."""
    start = pos = -1
    for ch in query:
        pos = text.find(ch, pos + 1)
        if pos < 0:
            return None
        if start < 0:
            start = pos
    return pos - start + 1 if start >= 0 else 0


def _score(path: str, query: str) -> tuple[int, int, int, int, str] | None:
    lowered = path.lower()
    name = lowered.rsplit("/", 1)[-1]
    span = _subsequence_span(lowered, query)
    if span is None:
        return None
    in_name = _subsequence_span(name, query)
    return (
        0 if in_name is not None else 1,
        0 if name.startswith(query) else (1 if query in lowered else 2),
        span - len(query),
        len(path),
        path,
    )


def rank_paths(paths: Iterable[str], query: str, limit: int) -> list[str]:
    """The ``limit`` best matches of ``query`` among ``paths`` (see the module docstring)."""
    q = query.strip().lower().lstrip("@")
    scored = ((s, p) for p in paths if (s := _score(p, q)) is not None)
    # Per keystroke over every recorded path: keep the best ``limit``, never sort all matches.
    return [p for _, p in heapq.nsmallest(limit, scored)]


def workspace_files(engine: Engine, params: WorkspaceFilesParams) -> WorkspaceFilesResult:
    """Called through the engine gate: ranks the head manifest's paths."""
    return WorkspaceFilesResult(paths=rank_paths(engine.head_manifest.keys(), params.query, params.limit))
