"""What git did in one checkpoint, in a few words, for its row (pure).

The commit path stamps the repository's state on every checkpoint (``meta["git"]``) and, when
HEAD or the branch moved since the parent checkpoint, the parent's too (``meta["gitBefore"]``,
:mod:`retrace.engine.gitstate`). :func:`git_change` turns the pair into "switched to branch x",
"committed abc1234", "reset to abc1234", "detached HEAD at abc1234" or "HEAD moved to abc1234";
the command in the label only chooses between a commit and a reset (both move a branch's HEAD).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from retrace.engine.gitstate import GitState

_RESET = re.compile(r"\bgit\b[^;&|]*\breset\b")
_COMMIT = re.compile(r"\bgit\b[^;&|]*\b(commit|am|cherry-pick|revert)\b")
_PULL = re.compile(r"\bgit\b[^;&|]*\b(pull|merge|rebase)\b")


def _short(oid: str | None) -> str:
    return oid[:7] if oid else "an unborn branch"


def _moved(label: str, head: str | None, first: bool) -> str:
    """A branch's HEAD moved to ``head``: by a reset, a pull/merge/rebase, a commit, or unknown."""
    if _RESET.search(label):
        return f"reset to {_short(head)}"
    if _PULL.search(label):
        return f"HEAD moved to {_short(head)} (pull/merge/rebase)"
    if _COMMIT.search(label) or first:
        return f"committed {_short(head)}"
    return f"HEAD moved to {_short(head)}"


def git_change(meta: Mapping[str, Any], label: str = "") -> str | None:
    """What git did between the parent checkpoint and this one (``None``: nothing, or unknown)."""
    before = GitState.from_meta(meta.get("gitBefore"))
    after = GitState.from_meta(meta.get("git"))
    if before is None or after is None:
        return None
    if after.detached and not before.detached:
        return f"detached HEAD at {_short(after.head)}"
    if after.branch != before.branch and after.branch is not None:
        created = " (new)" if re.search(r"\b(checkout|switch)\b[^;&|]*\s-[bcB]\b", label) else ""
        return f"switched to branch {after.branch}{created}"
    if after.head == before.head:
        return None
    return _moved(label, after.head, before.head is None)
