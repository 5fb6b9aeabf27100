"""Wire models of git-aware restores and of the side effects a restore does not undo."""

from __future__ import annotations

from typing import Literal

from retrace.camel import CamelModel

GitChoice = Literal["filesOnly", "parkFirst"]
"""How to restore when HEAD or the branch moved since the target: the files only (git untouched),
or first park the current state on a new branch (``retrace export --branch``), then restore."""


class GitRestoreInfo(CamelModel):
    """The repository at the target checkpoint and now."""

    target_head: str | None
    target_branch: str | None
    current_head: str | None
    current_branch: str | None
    head_moved: bool
    """HEAD is another commit than when the target checkpoint was made (a commit, reset, switch)."""
    branch_moved: bool
    """Another branch is checked out (or HEAD became / stopped being detached)."""
    parked_branch: str | None = None
    """After ``gitChoice: "parkFirst"``: the branch holding the state before the restore."""
    parked_commit: str | None = None


class SideEffectView(CamelModel):
    """A command after the target whose effect outside the workspace a restore does not undo."""

    checkpoint: str
    command: str
    """The piece of the command that does it."""
    kinds: list[str]
    """"installs packages outside the workspace", "containers", "database", "network write",
    "git push", "remote copy", "writes outside the workspace", "system services"."""
