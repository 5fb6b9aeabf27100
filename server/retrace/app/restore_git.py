"""Git-aware restores, and the side effects a restore does not undo, for every front end.

Each checkpoint records the repository's state (``meta["git"]``, :mod:`retrace.engine.gitstate`).
A restore puts files back, never git: when HEAD or the branch moved since the target checkpoint
(a commit, a reset, a branch switch), restoring its files on top of another commit is often not
what the user meant. :func:`check_git` compares and, for a code restore without the caller's
word (``gitChoice``), refuses with :class:`GitMoved` (a dry run only reports it, like
``settle_background``/``settle_agents`` in :mod:`retrace.app.restore`). ``filesOnly`` restores as
always; ``parkFirst`` first commits the current state on a new branch (:func:`park`, the export
of :func:`retrace.app.handoff.export.export_branch`: no working tree, index, HEAD or current
branch of the user is touched), then restores.

:func:`side_effects_after` lists the commands after the target (on the way from the head back to
it) whose effects outside the workspace (:mod:`retrace.agent.side_effects`) no restore undoes.
"""

from __future__ import annotations

from datetime import UTC, datetime

from retrace.agent.side_effects import (
    SideEffect,
    command_of_label,
    is_shell_tool,
    kinds_in_meta,
    side_effects,
)
from retrace.app.handoff.export import export_branch
from retrace.app.handoff.git import GitHandoffError, Repo
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.gitstate import GitState, read_git_state
from retrace.engine.models import Checkpoint, RestoreMode
from retrace.protocol.git_restore import GitChoice, GitRestoreInfo, SideEffectView

MAX_WALK = 20_000
"""Checkpoints looked at between the head and the target (a bound, not a limit met in practice)."""
PARK_PREFIX = "retrace/parked-"


class GitMoved(RetraceError):  # noqa: N818 (contract names)
    """A code restore when HEAD or the branch moved since the target, without ``gitChoice``."""

    code = "gitMoved"


def _short(oid: str | None) -> str:
    return oid[:7] if oid else "no commit"


def _where(branch: str | None, head: str | None) -> str:
    return f"branch {branch} at {_short(head)}" if branch else f"a detached HEAD at {_short(head)}"


def compare(target: GitState | None, current: GitState | None) -> GitRestoreInfo | None:
    """The repository then and now (pure; ``None`` when either is unknown)."""
    if target is None or current is None:
        return None
    return GitRestoreInfo(
        target_head=target.head,
        target_branch=target.branch,
        current_head=current.head,
        current_branch=current.branch,
        head_moved=target.head != current.head,
        branch_moved=(target.branch, target.detached) != (current.branch, current.detached),
    )


def moved_message(info: GitRestoreInfo) -> str:
    """The refusal's words."""
    return (
        f"git moved since this checkpoint: it was made on {_where(info.target_branch, info.target_head)}, "
        f"the repository is now on {_where(info.current_branch, info.current_head)}. A restore puts files "
        "back, not git. Restore the files only, or park the current state on a new branch first "
        '(gitChoice: "filesOnly" | "parkFirst"; command line: --git files-only | park-first)'
    )


def check_git(
    engine: Engine, target_id: str, mode: RestoreMode, *, dry_run: bool, choice: GitChoice | None
) -> GitRestoreInfo | None:
    """Before a restore: the repository at the target and now. A code restore when HEAD or the
    branch moved, without ``choice``, is refused (:class:`GitMoved`); a dry run or a
    conversation-only restore only reports it. Run it where the engine may be used."""
    target = engine.get(target_id)
    info = compare(GitState.from_meta(target.meta.get("git")), read_git_state(engine.workspace))
    moved = info is not None and (info.head_moved or info.branch_moved)
    if info is not None and moved and not dry_run and mode != "conversation" and choice is None:
        raise GitMoved(moved_message(info))
    return info


def park_name(repo: Repo, now: datetime) -> str:
    """A new branch name: ``retrace/parked-20260102-030405`` (``-2``, ``-3``… when taken)."""
    base = f"{PARK_PREFIX}{now.strftime('%Y%m%d-%H%M%S')}"
    for n in range(1, 100):
        name = base if n == 1 else f"{base}-{n}"
        if repo.ref_value(repo.branch_ref(name)) is None:
            return name
    raise GitHandoffError("no free branch name to park the current state on")


def park(engine: Engine, info: GitRestoreInfo, now: datetime | None = None) -> GitRestoreInfo:
    """Commit the workspace as it is now on a new branch (based on the current HEAD); ``info``
    with the branch. A failure is a :class:`GitHandoffError`: the restore does not happen."""
    engine.record_external(label="before parking on a branch")
    repo = Repo(engine.workspace)
    name = park_name(repo, now or datetime.now(UTC))
    result = export_branch(
        engine,
        engine.head.id,
        name,
        message=f"Parked by Retrace before restoring ({_where(info.current_branch, info.current_head)})",
    )
    return info.model_copy(update={"parked_branch": result.branch, "parked_commit": result.commit})


def park_if_asked(
    engine: Engine, info: GitRestoreInfo | None, mode: RestoreMode, *, dry_run: bool, choice: GitChoice | None
) -> GitRestoreInfo | None:
    """After :func:`check_git` passed: park first when git moved and the caller chose ``parkFirst``."""
    if info is None or dry_run or mode == "conversation" or choice != "parkFirst":
        return info
    if not (info.head_moved or info.branch_moved):
        return info
    return park(engine, info)


def settle_git(
    engine: Engine, target_id: str, mode: RestoreMode, *, dry_run: bool, choice: GitChoice | None
) -> GitRestoreInfo | None:
    """:func:`check_git` then :func:`park_if_asked`, for front ends with nothing to settle between
    them (the command line, a headless holder, ``retrace mcp`` on disk)."""
    info = check_git(engine, target_id, mode, dry_run=dry_run, choice=choice)
    return park_if_asked(engine, info, mode, dry_run=dry_run, choice=choice)


def _ancestors(engine: Engine, cp_id: str | None) -> list[Checkpoint]:
    chain: list[Checkpoint] = []
    while cp_id is not None and len(chain) < MAX_WALK:
        cp = engine.get(cp_id)
        chain.append(cp)
        cp_id = cp.parent
    return chain


def checkpoint_effects(cp: Checkpoint, workspace: str) -> list[SideEffect]:
    """What a checkpoint's shell command evidently did outside ``workspace`` (``[]``: not a
    shell command, or nothing evident)."""
    tool = cp.tool
    if cp.kind != "tool" or tool is None or not is_shell_tool(tool):
        return []
    return side_effects(command_of_label(tool, cp.label), workspace)


def side_effects_after(engine: Engine, target_id: str) -> list[SideEffectView]:
    """Shell commands between ``target_id`` and the head (newest first) whose effects outside the
    workspace a restore to the target does not undo."""
    kept = {cp.id for cp in _ancestors(engine, target_id)}
    workspace = str(engine.workspace)
    out: list[SideEffectView] = []
    for cp in _ancestors(engine, engine.head.id):
        if cp.id in kept:
            break
        effects = checkpoint_effects(cp, workspace)
        # What the commit stamped (the whole command, any agent) wins over the label's reading.
        kinds = kinds_in_meta(cp.meta) or [e.kind for e in effects]
        if kinds:
            command = effects[0].command if effects else command_of_label(cp.tool or "", cp.label)
            out.append(SideEffectView(checkpoint=cp.id, command=command, kinds=kinds))
    return out
