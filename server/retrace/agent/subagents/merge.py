"""Pure: how one path of a child's net change lands in the parent's workspace.

Three versions of the path: ``base`` (where the child started), ``ours`` (the parent's file on
disk now: the parent, the user or an earlier child may have changed it since) and ``theirs``
(the child's result); ``None`` means "no file". The rules, in order:

* the child left it as it was → nothing to do;
* the parent already has the child's version → nothing to do;
* nobody changed it here since the child started → take the child's version (write or delete);
* both changed a text file and the three-way text merge is clean → write the merge;
* otherwise → a conflict, reported and never resolved here (the parent's file is left as is).

A path unsaved in the editor is never written: any write to it is a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from retrace.engine.merge import merge3


@dataclass(frozen=True)
class Version:
    """What a path holds: file bytes (or a symlink's target) and the executable bit."""

    data: bytes
    executable: bool = False
    link: bool = False


StepKind = Literal["keep", "write", "delete", "conflict"]


@dataclass(frozen=True)
class MergeStep:
    path: str
    kind: StepKind
    version: Version | None = None
    """What to write (``write``)."""
    reason: str = ""
    """Why (``conflict``), or how (``write``: ``"merged"`` when both sides' edits were combined)."""


def decide(
    path: str, base: Version | None, ours: Version | None, theirs: Version | None, *, unsaved: bool = False
) -> MergeStep:
    if theirs in (base, ours):
        return MergeStep(path, "keep")
    if ours == base:
        step = MergeStep(path, "delete") if theirs is None else MergeStep(path, "write", theirs)
    else:
        step = _both_changed(path, base, ours, theirs)
    if unsaved and step.kind in ("write", "delete"):
        return MergeStep(path, "conflict", reason="it has unsaved changes in the editor")
    return step


def _both_changed(path: str, base: Version | None, ours: Version | None, theirs: Version | None) -> MergeStep:
    if ours is None:
        return MergeStep(path, "conflict", reason="deleted here since the subagent started, changed by it")
    if theirs is None:
        return MergeStep(path, "conflict", reason="changed here since the subagent started, deleted by it")
    if base is None:
        return MergeStep(path, "conflict", reason="created both here and by the subagent, differently")
    if base.link or ours.link or theirs.link:
        return MergeStep(path, "conflict", reason="a symbolic link changed on both sides")
    merged = merge3(base.data, ours.data, theirs.data)
    if merged is None:
        return MergeStep(
            path, "conflict", reason="both changed it and the changes overlap (or it is not text)"
        )
    executable = theirs.executable if theirs.executable != base.executable else ours.executable
    return MergeStep(path, "write", Version(merged.encode("utf-8"), executable), reason="merged")
