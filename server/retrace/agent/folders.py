"""The agent in a multi-root workspace: its file tools reach every folder, and a tool call that
wrote in another folder is checkpointed in that folder's own store too.

The agent's engine is the first folder's. :class:`FolderAccess` is the seam through which it sees
the others (the server provides it, :mod:`retrace.lsp.folder_access`; without one, or with one
folder, everything is exactly the single-folder agent): the folders in order, another folder's
engine gate, its unsaved editor paths, and a way to tell the editor of a checkpoint there.

Paths: :func:`route` applies :class:`retrace.engine.folders.FolderRouter` to what the model
wrote, except that a relative path whose first component names no folder stays the first
folder's (the single-folder habit of the model keeps working; ``<folder>/path`` names another
folder, and wins over a same-named directory of the first folder — the system prompt says so).

Checkpoints (:func:`checkpoint_other_folders`): one per other folder the call wrote in, in that
folder's store, with the same session, turn, tool and tool call id (so the call has its row in
each folder's timeline); the first folder's checkpoint of the call (always written: one row per
tool call, as today) lists them in ``meta.folders`` (root → checkpoint id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from retrace.engine.errors import RetraceError
from retrace.engine.folders import Folder, FolderRouter, Routed
from retrace.engine.workspace import EscapeError

if TYPE_CHECKING:
    from retrace.engine.engine import Engine
    from retrace.engine.gate import EngineGate
    from retrace.engine.models import Checkpoint, CheckpointKind


class FolderAccess(Protocol):
    """What the agent may know of the workspace's other folders."""

    def folders(self) -> tuple[Folder, ...]:
        """Every folder of the workspace, the agent's own (the first) first."""
        ...

    def gate(self, root: str) -> EngineGate | None:
        """The engine gate of the folder at ``root`` (``None``: not open, or removed)."""
        ...

    def dirty_paths(self, root: str) -> frozenset[str]:
        """Folder-relative paths with unsaved editor changes in the folder at ``root``."""
        ...

    async def created(self, root: str, checkpoint: Checkpoint) -> None:
        """A checkpoint was committed in the folder at ``root`` (tell the editor)."""
        ...


def route(folders: tuple[Folder, ...], raw: str) -> Routed | None:
    """The folder ``raw`` names and the path in it (the first folder too, when named);
    ``None``: ``raw`` as it is, in the first folder (one folder; a relative path whose first
    component names no folder; an absolute path no folder holds, which the first folder's rule
    then refuses as today). Raises :class:`EscapeError` for an ambiguous folder name or a path
    that leaves its folder."""
    if len(folders) < 2:
        return None
    router = FolderRouter(folders)
    if router.is_absolute(raw):
        try:
            return router.route(raw)
        except EscapeError:
            return None
    parts = [p for p in raw.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or not router.named(parts[0]):
        return None
    if len(parts) == 1:  # the folder itself (a listing of it; a write there is refused later)
        named = router.folder(parts[0])
        return Routed(named, ".")
    return router.route(raw)


def folders_prompt(folders: tuple[Folder, ...]) -> str:
    """The system prompt's section on a multi-root workspace (empty with one folder)."""
    if len(folders) < 2:
        return ""
    lines = [
        "# Workspace folders",
        "This workspace has several folders. Paths without a folder name are in the first one; "
        "name a file in another folder by starting its path with that folder's name (a folder "
        "name wins over a same-named directory of the first folder). read_file, write_file, "
        "edit_file, list_files and search_text work in every folder (search_text's paths come "
        "back with their folder's name); run_command starts in the first folder unless its cwd "
        'names another (cwd: "<folder>" or "<folder>/sub"). A subagent (task) works in a copy of '
        "the first folder only: do the other folders' work yourself.",
    ]
    lines += [f"- {f.name}/ → {f.root}" + (" (first)" if i == 0 else "") for i, f in enumerate(folders)]
    return "\n".join(lines)


class OtherFolderError(RetraceError):
    """A checkpoint in another folder could not be recorded."""

    code = "checkpointFailed"


async def checkpoint_other_folders(
    access: FolderAccess,
    written: Mapping[str, list[str]],
    *,
    label: str,
    session_id: str,
    turn_id: str | None,
    tool: str,
    tool_call_id: str,
) -> tuple[dict[str, str], list[str]]:
    """One checkpoint per other folder written in: (root → checkpoint id, problems)."""
    made: dict[str, str] = {}
    problems: list[str] = []
    for root, paths in sorted(written.items()):
        gate = access.gate(root)
        if gate is None:
            problems.append(f"{root} is no longer a folder of this workspace")
            continue

        def commit(engine: Engine, paths: list[str] = paths) -> Checkpoint:
            return engine.checkpoint(
                label,
                sorted(set(paths)),
                kind="tool",
                session_id=session_id,
                turn_id=turn_id,
                tool=tool,
                tool_call_id=tool_call_id,
            )

        try:
            cp = await gate.run(commit)
        except (RetraceError, OSError) as exc:
            problems.append(f"{root}: {exc}")
            continue
        made[root] = cp.id
        await access.created(root, cp)
    return made, problems


async def record_other_folders(
    access: FolderAccess, kind: CheckpointKind, context: Mapping[str, Any]
) -> tuple[dict[str, str], list[str]]:
    """Changes nobody announced in each other open folder, as a ``kind`` checkpoint there (a
    command's effects after it ran — ``tool`` —, someone else's before a call — ``external``);
    folders where nothing changed get none: (root → checkpoint id, problems)."""
    made: dict[str, str] = {}
    problems: list[str] = []
    for folder in access.folders()[1:]:
        gate = access.gate(folder.root)
        if gate is None:
            continue

        def capture(engine: Engine) -> Checkpoint | None:
            return engine.record_foreign(kind, dict(context))

        try:
            cp = await gate.run(capture)
        except (RetraceError, OSError) as exc:
            problems.append(f"{folder.root}: {exc}")
            continue
        if cp is not None:
            made[folder.root] = cp.id
            await access.created(folder.root, cp)
    return made, problems


__all__ = [
    "EscapeError",
    "FolderAccess",
    "OtherFolderError",
    "checkpoint_other_folders",
    "folders_prompt",
    "record_other_folders",
    "route",
]
