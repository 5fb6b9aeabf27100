"""Build the timeline tree: one chronological story per agent session.

Where a checkpoint goes:

* a checkpoint an agent session made (a tool call, a summary, anything stamped with a turn) is in
  that session's story, inside its turn;
* everything else (external changes, safety captures, restores, marks) happens to whatever the
  user was working on, so it goes where its parent (the head it followed) went, as a row in place;
* what precedes every agent session (the baseline, early external changes) forms ONE workspace
  story, however many engine sessions (server starts, CLI runs) recorded it.

Items of a story are ordered by time; rows inside a turn by commit order. Paging keeps the newest
``max_rows`` rows of each story.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime

from retrace.agent.recent_calls import ToolCallView
from retrace.agent.side_effects import kinds_in_meta
from retrace.agent.terminal import describe as describe_terminal
from retrace.app.timeline.agents import agent_title, conversation_reason, latest_activity
from retrace.app.timeline.describe import describe
from retrace.app.timeline.facts import SessionFacts, ToolFact, TurnFact
from retrace.app.timeline.git_rows import git_change
from retrace.engine.models import Checkpoint
from retrace.protocol.models import TimelineDidChange
from retrace.protocol.timeline import (
    ConversationRestore,
    SessionInfo,
    SessionStory,
    StoryRow,
    StoryTurn,
    TurnState,
)

_WORKSPACE = ""


@dataclass
class _TurnDraft:
    fact: TurnFact
    rows: list[RowSeed] = field(default_factory=list)


@dataclass
class _StoryDraft:
    story_id: str
    turns: dict[str, _TurnDraft] = field(default_factory=dict)
    loose: list[RowSeed] = field(default_factory=list)
    first: datetime | None = None


def owner_of(cp: Checkpoint, agent_sessions: AbstractSet[str], owners: Mapping[str, str]) -> str:
    """Id of the story ``cp`` belongs to (``""``: the workspace story), given the owners of the
    checkpoints committed before it."""
    own = cp.session_id in agent_sessions
    if own and (cp.kind in ("tool", "summary") or cp.turn_id is not None):
        return cp.session_id
    if cp.parent is not None and cp.parent in owners:
        return owners[cp.parent]
    return cp.session_id if own else _WORKSPACE


def _owners(checkpoints: Sequence[Checkpoint], agent_sessions: set[str]) -> dict[str, str]:
    """Checkpoint id → id of the story it belongs to (``""``: the workspace story)."""
    owners: dict[str, str] = {}
    for cp in checkpoints:  # commit order: a parent is always seen before its children
        owners[cp.id] = owner_of(cp, agent_sessions, owners)
    return owners


class RowSeed:
    """A row before it is a :class:`StoryRow`: its checkpoint, words, tool status and head flag.
    A build keeps these (one small object per checkpoint, the checkpoint shared with the
    engine's list); a page makes :class:`StoryRow` objects of only the rows it sends
    (:meth:`row`). Immutable by convention: a change makes a new seed (:meth:`with_head`)."""

    __slots__ = ("agent", "checkpoint", "is_head", "summary", "title", "tool_status")

    def __init__(
        self,
        checkpoint: Checkpoint,
        title: str,
        summary: str,
        tool_status: str | None,
        is_head: bool,
        *,
        agent: str | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.title = title
        self.summary = summary
        self.tool_status = tool_status
        self.is_head = is_head
        self.agent = agent
        """The agent whose session holds the row (its conversation cannot be restored)."""

    def with_head(self, is_head: bool) -> RowSeed:
        return RowSeed(self.checkpoint, self.title, self.summary, self.tool_status, is_head, agent=self.agent)

    def row(self) -> StoryRow:
        cp = self.checkpoint
        return StoryRow(
            checkpoint=_slim(cp),
            title=self.title,
            summary=self.summary,
            tool_status=self.tool_status,
            is_head=self.is_head,
            branch=cp.kind == "restore",
            terminal=describe_terminal(cp.terminal),
            conversation_restore=conversation_restore(self.agent),
            git_change=git_change(cp.meta, cp.label),
            side_effects=kinds_in_meta(cp.meta),
        )


def row_agent(cp: Checkpoint, facts: SessionFacts | None) -> str | None:
    """The agent a row's conversation belongs to: its session's, or the one stamped on it."""
    if facts is not None and facts.agent is not None:
        return facts.agent
    agent = cp.meta.get("agent")
    return agent if isinstance(agent, str) and agent else None


def conversation_restore(agent: str | None) -> ConversationRestore | None:
    """What a row of ``agent``'s session says about conversation restores (``None``: offered)."""
    if agent is None:
        return None
    return ConversationRestore(available=False, reason=conversation_reason(agent))


def row_seed(
    cp: Checkpoint,
    tool: ToolFact | None,
    described: dict[str, tuple[str, str]],
    head: str | None,
    words: tuple[str, str] | None = None,
    *,
    agent: str | None = None,
) -> RowSeed:
    """``cp`` described as a row (``words``: its (title, summary) already known; ``agent``: the
    agent whose session holds it); records them in ``described`` (the rows before it, in commit
    order: a restore names its target there)."""
    title, summary = described[cp.id] = words if words is not None else describe(cp, tool, described)
    status = tool.status if tool is not None else None
    return RowSeed(cp, title, summary, status, cp.id == head, agent=agent)


def story_row(
    cp: Checkpoint,
    tool: ToolFact | None,
    described: dict[str, tuple[str, str]],
    head: str | None,
    words: tuple[str, str] | None = None,
) -> StoryRow:
    """:func:`row_seed` made a :class:`StoryRow`."""
    return row_seed(cp, tool, described, head, words).row()


def _slim(cp: Checkpoint) -> Checkpoint:
    return cp if cp.editor_state is None else cp.model_copy(update={"editor_state": None})


def _sort_key(moment: datetime | None) -> tuple[int, float]:
    return (0, 0.0) if moment is None else (1, moment.timestamp())


def _draft_stories(
    checkpoints: Sequence[Checkpoint],
    head: str | None,
    facts: Mapping[str, SessionFacts],
    described: dict[str, tuple[str, str]],
) -> dict[str, _StoryDraft]:
    agent_sessions = {sid for sid, f in facts.items() if f.is_agent_session}
    owners = _owners(checkpoints, agent_sessions)
    drafts: dict[str, _StoryDraft] = {}
    for sid in sorted(agent_sessions):
        draft = drafts[sid] = _StoryDraft(sid)
        for turn in facts[sid].turns:
            draft.turns[turn.turn_id] = _TurnDraft(turn)
    for cp in checkpoints:
        story_id = owners[cp.id]
        draft = drafts.setdefault(story_id, _StoryDraft(story_id))
        session_facts = facts.get(cp.session_id)
        tool, words = None, None
        if session_facts is not None:
            tool = session_facts.tools.get(cp.tool_call_id or "")
            words = session_facts.words.get(cp.id) if cp.kind == "tool" else None
        row = row_seed(cp, tool, described, head, words, agent=row_agent(cp, session_facts))
        if draft.first is None:
            draft.first = cp.created_at
        if cp.turn_id is not None and story_id == cp.session_id:
            turn_draft = draft.turns.get(cp.turn_id)
            if turn_draft is None:  # a turn the journal does not name (damaged or foreign): keep its rows
                turn_draft = draft.turns[cp.turn_id] = _TurnDraft(TurnFact(cp.turn_id, "", cp.created_at))
            turn_draft.rows.append(row)
        else:
            draft.loose.append(row)
    return drafts


def _page(items: list[StoryTurn | StoryRow], max_rows: int) -> tuple[list[StoryTurn | StoryRow], int]:
    """Keep the newest ``max_rows`` rows (turns keep their newest rows); returns (items, omitted)."""
    total = sum(len(i.rows) if isinstance(i, StoryTurn) else 1 for i in items)
    budget, omitted = max_rows, max(0, total - max_rows)
    if omitted == 0:
        return items, 0
    kept: list[StoryTurn | StoryRow] = []
    for item in reversed(items):
        if budget <= 0:
            break
        if isinstance(item, StoryRow):
            kept.append(item)
            budget -= 1
        elif item.rows:
            item.rows = item.rows[-budget:]
            budget -= len(item.rows)
            kept.append(item)
        else:
            kept.append(item)
    kept.reverse()
    return kept, omitted


def built_state(facts: SessionFacts | None, turn_id: str, latest: str | None) -> TurnState | None:
    """An external turn's state as the journal says (``None``: a turn of Retrace's own): its
    latest open turn is ``running`` here; whether it is still alive is decided when a page is
    sent (:func:`~retrace.app.timeline.pages.select`, the idle rule of :mod:`.agents`)."""
    if facts is None or facts.agent is None:
        return None
    if turn_id in facts.ended_turns:
        return "ended"
    return "running" if turn_id == latest else "interrupted"


def _last_activity(draft: _StoryDraft, facts: SessionFacts | None) -> datetime | None:
    rows = [r for t in draft.turns.values() for r in t.rows] + draft.loose
    newest = max((r.checkpoint.created_at for r in rows), default=None)
    return latest_activity(facts.last_event_at if facts is not None else None, newest)


StoryItems = list[tuple[StoryTurn | None, list[RowSeed]]]
"""A story's items in order, rows not made yet: (a turn, its rows) — the turn's own ``rows``
left empty — or (``None``, [one row in place])."""


def _ordered(
    draft: _StoryDraft, facts: SessionFacts | None, running: bool
) -> tuple[SessionStory, StoryItems]:
    """The story's header (every count, no items) and its items in time order."""
    abandoned = facts.abandoned_turns if facts is not None else set()
    timed: list[tuple[tuple[int, float], int, StoryTurn | None, list[RowSeed]]] = []
    latest = next(reversed(draft.turns), None)
    for number, turn in enumerate(draft.turns.values(), 1):
        moment = turn.fact.created_at or (turn.rows[0].checkpoint.created_at if turn.rows else None)
        item = StoryTurn(
            turn_id=turn.fact.turn_id,
            number=number,
            prompt=turn.fact.prompt,
            created_at=moment,
            abandoned=turn.fact.turn_id in abandoned,
            forked_from=turn.fact.forked_from,
            rows=[],
            state=built_state(facts, turn.fact.turn_id, latest),
        )
        timed.append((_sort_key(moment), len(timed), item, turn.rows))
    for row in draft.loose:
        timed.append((_sort_key(row.checkpoint.created_at), len(timed), None, [row]))
    timed.sort(key=lambda t: (t[0], t[1]))
    row_count = sum(len(t.rows) for t in draft.turns.values()) + len(draft.loose)
    turns = [t.fact for t in draft.turns.values()]
    first_prompt = next((t.prompt for t in turns if t.prompt), "")
    created = turns[0].created_at if turns and turns[0].created_at else draft.first
    agent = facts.agent if facts is not None else None
    info = SessionInfo(
        id=draft.story_id,
        title=first_prompt[:200],  # the workspace story has no prompt: "" (clients name it)
        created_at=created,
        running=running,
        checkpoint_count=row_count,
        agent=agent,
        agent_title=agent_title(agent) if agent is not None else None,
        last_activity_at=_last_activity(draft, facts) if agent is not None else None,
    )
    header = SessionStory(
        session=info,
        workspace=facts is None,
        turn_count=len(draft.turns),
        row_count=row_count,
        rows_omitted=0,
        items=[],
    )
    return header, [(turn, rows) for _, _, turn, rows in timed]


def _finish(draft: _StoryDraft, facts: SessionFacts | None, running: bool, max_rows: int) -> SessionStory:
    header, ordered = _ordered(draft, facts, running)
    items: list[StoryTurn | StoryRow] = [
        turn.model_copy(update={"rows": [r.row() for r in rows]}) if turn is not None else rows[0].row()
        for turn, rows in ordered
    ]
    items, omitted = _page(items, max_rows)
    return header.model_copy(update={"rows_omitted": omitted, "items": items})


def _drafts(
    checkpoints: Sequence[Checkpoint],
    head: str | None,
    facts: Mapping[str, SessionFacts],
    only: str | None,
    described: dict[str, tuple[str, str]] | None,
) -> list[tuple[str, _StoryDraft, SessionFacts | None]]:
    """(owner id: ``""`` for the workspace story, its draft, its session's facts) per story."""
    drafts = _draft_stories(checkpoints, head, facts, {} if described is None else described)
    out: list[tuple[str, _StoryDraft, SessionFacts | None]] = []
    for story_id, draft in drafts.items():
        session_facts = facts.get(story_id) if story_id != _WORKSPACE else None
        if story_id == _WORKSPACE and draft.loose:  # named after the engine session that began it
            draft.story_id = draft.loose[0].checkpoint.session_id
        if only is None or draft.story_id == only:
            out.append((story_id, draft, session_facts))
    return out


def story_items(
    checkpoints: Sequence[Checkpoint],
    head: str | None,
    facts: Mapping[str, SessionFacts],
    *,
    described: dict[str, tuple[str, str]] | None = None,
) -> list[tuple[SessionStory, StoryItems]]:
    """What :func:`build_stories` builds, every row, with the rows left as :class:`RowSeed`:
    per story (oldest first) its header and its items. A page makes rows of the seeds it sends
    (:class:`~retrace.app.timeline.pages.StoryPages`), so a build costs no row objects."""
    built = [_ordered(draft, f, False) for _, draft, f in _drafts(checkpoints, head, facts, None, described)]
    built.sort(key=lambda story: _sort_key(story[0].session.created_at))
    return built


def build_stories(
    checkpoints: Sequence[Checkpoint],
    head: str | None,
    facts: Mapping[str, SessionFacts],
    *,
    running: frozenset[str] = frozenset(),
    max_rows: int = 1000,
    only: str | None = None,
    described: dict[str, tuple[str, str]] | None = None,
) -> list[SessionStory]:
    """Every story, oldest first (``only``: just the story with that session id).

    ``checkpoints``: every checkpoint in commit order; ``facts``: per session id, from its journal;
    ``running``: sessions running a turn now; ``described``: filled with every checkpoint's
    (title, summary), for rows described later."""
    stories = [
        _finish(draft, f, owner in running, max_rows)
        for owner, draft, f in _drafts(checkpoints, head, facts, only, described)
    ]
    stories.sort(key=lambda s: _sort_key(s.session.created_at))
    return stories


def timeline_change(checkpoint: Checkpoint, calls: Sequence[ToolCallView]) -> TimelineDidChange:
    """The notification for a checkpoint just committed, with its row described (``calls``: the
    agent's recent tool calls, for the input and status), so a client can insert the row without
    fetching the whole tree again."""
    view = next((c for c in reversed(calls) if c.id == checkpoint.tool_call_id), None)
    tool = ToolFact(view.id, view.tool, view.input, view.status) if view is not None else None
    row = story_row(checkpoint, tool, {}, checkpoint.id)
    return TimelineDidChange(head=checkpoint.id, checkpoint=checkpoint, row=row, turn_id=checkpoint.turn_id)
