"""Checkpoints to git: a new branch from one checkpoint, a patch series of a range, and the
per-turn mirror ref.

* :func:`export_branch` — one commit whose tree is the checkpoint's files on top of the base
  commit's tree (see :mod:`retrace.app.handoff.tree` for what is owned), parent = the base
  (default ``HEAD``; an unborn ``HEAD`` gives a root commit), then ``refs/heads/<name>`` created
  with the zero id as its expected old value: an existing branch is refused, never moved.
* :func:`export_patches` — the checkpoints from A (exclusive) to B (inclusive) along B's
  ancestry, one commit per agent turn (the turn is the unit a user reviews and the unit its
  message describes; a checkpoint outside any turn — external, safety, restore, manual — is a
  commit of its own), chained on the base as unreferenced commits, written by
  ``git format-patch``. When A's files differ from the base, a first patch brings the base to A,
  so ``git am`` on the base always yields B's files.
* :func:`mirror_turn` — the turn's end state committed onto ``refs/heads/retrace/<session>``
  (parent = the ref's previous commit, or ``HEAD`` the first time), compare-and-swap.

Nothing here touches the user's working tree, index file, ``HEAD`` or current branch: every
tree is built in a temporary index. Without a configured git identity the commit is made by
``Retrace <retrace@localhost>`` and its message says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from retrace.app.handoff.git import GitHandoffError, Identity, Repo, parse_author
from retrace.app.handoff.tree import TreeBuilder
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import TurnEvent

log = logging.getLogger(__name__)

SUBJECT_MAX = 72
MIRROR_PREFIX = "refs/heads/retrace/"


@dataclass(frozen=True)
class ExportResult:
    commit: str
    branch: str
    files: int
    base: str | None


@dataclass(frozen=True)
class PatchResult:
    patches: list[str]
    commits: list[str]
    base: str | None


def turn_prompts(engine: Engine, session_id: str) -> dict[str, str]:
    """Turn id → the prompt that started it, for one session."""
    return {
        e.turn_id: e.text for e in engine.events(session_id, only=(TurnEvent,)) if isinstance(e, TurnEvent)
    }


def _subject(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUBJECT_MAX else line[: SUBJECT_MAX - 1].rstrip() + "…"


def _ancestry(engine: Engine, cp: Checkpoint, stop: str | None = None) -> list[Checkpoint]:
    """``cp`` and its ancestors, oldest first, from just after ``stop`` (exclusive)."""
    chain: list[Checkpoint] = []
    cur: Checkpoint | None = cp
    while cur is not None and cur.id != stop:
        chain.append(cur)
        cur = engine.get(cur.parent) if cur.parent else None
    if stop is not None and cur is None:
        raise GitHandoffError(f"checkpoint {stop} is not an ancestor of {cp.id}")
    chain.reverse()
    return chain


def describe(cp: Checkpoint, prompts: dict[str, str]) -> str:
    """One line saying what a checkpoint is."""
    if cp.turn_id and cp.turn_id in prompts:
        return _subject(prompts[cp.turn_id])
    if cp.kind == "tool":
        return f"{cp.tool or 'tool'} call"
    return f"{cp.kind} checkpoint" + (f": {cp.label}" if cp.label else "")


def branch_message(engine: Engine, cp: Checkpoint, fallback: bool) -> str:
    """Subject = the latest turn's prompt up to ``cp``; body = every turn's prompt, oldest first."""
    prompts = turn_prompts(engine, cp.session_id)
    turns: list[str] = []
    for c in _ancestry(engine, cp):
        if c.session_id == cp.session_id and c.turn_id in prompts and prompts[c.turn_id] not in turns:
            turns.append(prompts[c.turn_id])
    subject = _subject(turns[-1]) if turns else f"Retrace checkpoint {cp.id}"
    body = [f"- {_subject(t)}" for t in turns]
    return _with_trailer(subject, body, cp, fallback)


def _with_trailer(subject: str, body: Sequence[str], cp: Checkpoint, fallback: bool) -> str:
    lines = [subject, ""]
    if body:
        lines += ["Turns:", *body, ""]
    lines.append(f"Exported by Retrace from checkpoint {cp.id} (session {cp.session_id}).")
    if fallback:
        lines.append("No git identity is configured: committed as Retrace <retrace@localhost>.")
    return "\n".join(lines) + "\n"


def _author(text: str | None) -> Identity | None:
    return parse_author(text) if text else None


def export_branch(
    engine: Engine,
    cp_id: str,
    branch: str,
    *,
    message: str | None = None,
    author: str | None = None,
    base: str | None = None,
) -> ExportResult:
    cp = engine.get(cp_id)
    repo = Repo(engine.workspace)
    ref = repo.branch_ref(branch)
    if repo.ref_value(ref) is not None:
        raise GitHandoffError(f"branch {branch} already exists")
    parent = repo.commit_of(base or "HEAD")
    env, fallback = repo.identity(_author(author))
    with repo.temp_index():
        builder = TreeBuilder(repo, engine)
        builder.start(parent)
        builder.sync_to(cp.id)
        tree = builder.write_tree()
    if message:
        text = message if message.endswith("\n") else message + "\n"
        if fallback:
            text += "\nNo git identity is configured: committed as Retrace <retrace@localhost>.\n"
    else:
        text = branch_message(engine, cp, fallback)
    commit = repo.commit_tree(tree, parent, text, env)
    repo.update_ref(ref, commit, None, f"retrace: export checkpoint {cp.id}")
    return ExportResult(commit=commit, branch=branch, files=builder.files, base=parent)


def _groups(chain: list[Checkpoint]) -> list[list[Checkpoint]]:
    """Consecutive checkpoints of one turn together; any other checkpoint alone."""
    groups: list[list[Checkpoint]] = []
    for cp in chain:
        last = groups[-1][-1] if groups else None
        if last is not None and cp.turn_id and last.turn_id == cp.turn_id:
            groups[-1].append(cp)
        else:
            groups.append([cp])
    return groups


def export_patches(
    engine: Engine,
    a_id: str,
    b_id: str,
    out_dir: Path,
    *,
    author: str | None = None,
    base: str | None = None,
) -> PatchResult:
    a, b = engine.get(a_id), engine.get(b_id)
    chain = _ancestry(engine, b, a.id)
    repo = Repo(engine.workspace)
    parent = repo.commit_of(base or "HEAD")
    env, fallback = repo.identity(_author(author))
    commits: list[str] = []
    tip = parent
    with repo.temp_index():
        builder = TreeBuilder(repo, engine)
        builder.start(parent)
        base_tree = builder.write_tree() if parent is not None else None
        builder.sync_to(a.id)
        tree = builder.write_tree()
        if parent is None or tree != base_tree:
            text = _with_trailer(f"Retrace: files at checkpoint {a.id}", [], a, fallback)
            tip = repo.commit_tree(tree, tip, text, env)
            commits.append(tip)
        prev = a.id
        for group in _groups(chain):
            prompts = turn_prompts(engine, group[-1].session_id)
            builder.advance(prev, group[-1].id)
            prev = group[-1].id
            tree = builder.write_tree()
            body = [f"- {c.kind}{' ' + c.tool if c.tool else ''}: {c.id}" for c in group]
            text = _with_trailer(describe(group[-1], prompts), body, group[-1], fallback)
            tip = repo.commit_tree(tree, tip, text, env)
            commits.append(tip)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not commits:
        return PatchResult(patches=[], commits=[], base=parent)
    rng = ["--root", commits[-1]] if parent is None else [f"{parent}..{commits[-1]}"]
    listed = repo.run(
        [
            "format-patch",
            "--no-ext-diff",
            "--no-textconv",
            "--binary",
            "--no-signature",
            "-o",
            str(out_dir.resolve()),
            *rng,
        ]
    )
    return PatchResult(patches=[ln for ln in listed.splitlines() if ln], commits=commits, base=parent)


def mirror_session(engine: Engine, session_id: str, oids: dict[str, str] | None = None) -> str | None:
    """:func:`mirror_turn` of the session's latest checkpoint; a failure is logged (never raised:
    the mirror never fails a turn). The new commit, or ``None``. ``oids``: see :class:`TreeBuilder`."""
    head = engine.head
    if head.session_id != session_id:
        mine = engine.timeline(session_id)
        if not mine:
            return None
        head = mine[-1]
    try:
        commit = mirror_turn(engine, session_id, head.id, oids)
    except (RetraceError, OSError) as exc:
        log.warning("git mirror of session %s skipped: %s", session_id, exc)
        if oids is not None:
            oids.clear()  # a cached blob id may be what failed (a repository pruned or replaced)
        return None
    if commit is not None:
        log.info("git mirror: %s%s -> %s (checkpoint %s)", MIRROR_PREFIX, session_id, commit, head.id)
    return commit


def mirror_turn(
    engine: Engine, session_id: str, cp_id: str, oids: dict[str, str] | None = None
) -> str | None:
    """Commit checkpoint ``cp_id`` (a turn's end) onto ``refs/heads/retrace/<session_id>``; the
    new commit, or ``None`` when the tree did not change. Raises :class:`GitHandoffError`."""
    repo = Repo(engine.workspace)
    ref = repo.branch_ref(f"retrace/{session_id}")
    old = repo.ref_value(ref)
    parent = old or repo.commit_of("HEAD")
    env, fallback = repo.identity(None)
    cp = engine.get(cp_id)
    with repo.temp_index():
        builder = TreeBuilder(repo, engine, oids)
        builder.start(parent)
        before = builder.write_tree() if parent is not None else None
        builder.sync_to(cp.id)
        tree = builder.write_tree()
    if tree == before and old is not None:
        return None
    prompts = turn_prompts(engine, session_id)
    commit = repo.commit_tree(tree, parent, _with_trailer(describe(cp, prompts), [], cp, fallback), env)
    repo.update_ref(ref, commit, old, f"retrace: mirror turn end {cp.id}")
    return commit
