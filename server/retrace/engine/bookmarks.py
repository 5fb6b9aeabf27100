"""Bookmarks: named checkpoints, the ones a person goes back to first.

A checkpoint is a bookmark when it has a name: the name a person gave it last
(``checkpointName`` journal events, folded by replay into ``engine.history.names``: the last one
wins, an empty one removes it), else — never named — the label of a ``manual`` checkpoint made
as a mark (``retrace checkpoint``, the MCP tool, the editor's *Bookmark the Current State…*; not
a subagent's applied result, which is ``manual`` for the record only).

One owner for each step: :func:`mark` is THE way a manual checkpoint is recorded (the relay's
``checkpoint`` for the CLI and ``retrace mcp``, the editor's command); :func:`name_checkpoint`
names an existing one; :func:`bookmarks` and :func:`bookmarks_first` are pure over what the
engine holds (table-tested). Names follow :mod:`retrace.engine.bookmark_name`. Kept in the engine
(no protocol, no application service): ``retrace checkpoint`` and ``retrace log`` use it and
import nothing more; the timeline's rows are stamped by :mod:`retrace.app.bookmarks`.
The pure rules (which checkpoint is a bookmark, its name) live in :mod:`.bookmark_name`, so
retention (:mod:`retrace.engine.gc`, below the engine) keeps bookmarks too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrace.engine.bookmark_name import bookmark_of, bookmarks, clean_name, required_name
from retrace.engine.engine import Engine
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import CheckpointNameEvent


def engine_bookmarks(engine: Engine) -> dict[str, str]:
    """Every bookmark of the engine's checkpoints (O(checkpoints), strings only)."""
    return bookmarks(engine.timeline(), engine.history.names)


def bookmarks_first(newest_first: Sequence[str], named: Mapping[str, str]) -> list[str]:
    """The order a restore pick offers checkpoint ids in: the bookmarks first, then the rest,
    each group in the order given (newest first)."""
    return [c for c in newest_first if c in named] + [c for c in newest_first if c not in named]


@dataclass(frozen=True)
class Named:
    checkpoint: Checkpoint
    name: str | None
    """The bookmark name now (``None``: the name was removed)."""


def name_checkpoint(engine: Engine, checkpoint_id: str, raw_name: str) -> Named:
    """Give an existing checkpoint a name (an empty one removes it): one durable
    ``checkpointName`` event in the engine's session journal, then the engine's names. Raises
    for a name the rule refuses, an unknown checkpoint or an engine that may not write, before
    anything is written."""
    name = clean_name(raw_name)
    engine.require_writer()
    cp = engine.get(checkpoint_id)
    engine.append_event(CheckpointNameEvent(checkpoint_id=cp.id, name=name))
    engine.history.names[cp.id] = name
    return Named(cp, bookmark_of(cp, engine.history.names))


def mark(
    engine: Engine,
    label: str,
    *,
    session_id: str | None = None,
    paths: Sequence[str] | None = None,
    between_tools: bool = False,
) -> Checkpoint:
    """THE manual checkpoint (a mark): every change since the head (``paths``: exactly those).
    ``between_tools``: an agent turn is running, so only the state its last checkpoint recorded
    is named (no file is captured: one a tool is writing now belongs to that tool's checkpoint,
    never to the mark). ``session_id``: the session it joins (default: the engine's)."""
    session = {} if session_id is None else {"session_id": session_id}
    if between_tools:
        return engine.checkpoint(
            label=label, changed_paths=[], kind="manual", meta={"duringTurn": True}, **session
        )
    return engine.checkpoint(label=label, changed_paths=paths, kind="manual", **session)


def bookmark_now(
    engine: Engine, raw_name: str, *, between_tools: bool, session_id: str | None = None
) -> Checkpoint:
    """The editor's *Bookmark the Current State…*: a named mark (the name required and checked
    before anything is captured)."""
    name = required_name(raw_name)
    engine.require_writer()
    return mark(engine, name, session_id=session_id, between_tools=between_tools)
