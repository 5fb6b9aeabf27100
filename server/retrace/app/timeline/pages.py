"""Pages of a story: the newest rows, or the rows older than a cursor, optionally filtered.

A built :class:`SessionStory` (every row, see :func:`~retrace.app.timeline.story.build_stories`),
or a story's header and items with rows not made yet (:func:`~retrace.app.timeline.story.story_items`,
what the cache builds), is flattened once into entries in story order: one per row (with the turn
it sits in, if any) and one per turn without rows. A row kept as a
:class:`~retrace.app.timeline.story.RowSeed` becomes a :class:`StoryRow` only when a page sends
it (a 10,000-row story builds no 10,000 row objects for a 500-row page).

A page is a run of consecutive entries holding at most ``max_rows``
rows, regrouped into the story's items (a turn cut by the page boundary keeps the rows inside the
page; the next older page carries the same turn with its older rows). Contracts:

* cost: an unfiltered page walks only the entries it returns (O(page), a dict lookup finds the
  cursor); a filtered page scans the story once (O(story), strings only);
* ``before``: a checkpoint id or a turn id of this story; only older entries are returned;
  unknown cursor → :class:`KeyError`;
* appends (:meth:`StoryPages.append_row`, :meth:`StoryPages.append_turn`) keep the pages equal to
  a fresh build of the same story (the cache's incremental path);
* the returned story keeps the story's counts (``turnCount``, ``rowCount``; filtered: the matching
  rows), sets ``rowsOmitted`` to the rows older than the page and ``nextBefore`` to the cursor
  that asks for them (``None`` when nothing older is left).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from retrace.app.bookmarks import stamp_bookmarks
from retrace.app.timeline.agents import latest_activity, turn_state
from retrace.app.timeline.story import RowSeed, StoryItems
from retrace.protocol.timeline import (
    SessionInfo,
    SessionStory,
    StoryRow,
    StoryTurn,
    TimelineFilter,
    TimelineTreeParams,
    TurnState,
)

Row = StoryRow | RowSeed
"""A row as the pages keep it: made, or its seed (both have ``checkpoint``, ``title``, ``summary``)."""


def made(row: Row) -> StoryRow:
    return row if isinstance(row, StoryRow) else row.row()


@dataclass(frozen=True)
class _Entry:
    row: Row | None
    """``None``: a turn without rows."""
    turn: StoryTurn | None
    """The turn the row sits in: its header (``rows`` empty; a page regroups the rows)."""

    @property
    def cursor(self) -> str:
        if self.row is not None:
            return self.row.checkpoint.id
        assert self.turn is not None
        return self.turn.turn_id


Matcher = Callable[[Row, StoryTurn | None], bool]


def matcher(spec: TimelineFilter, named: Collection[str] = frozenset()) -> Matcher | None:
    """A row predicate for a filter: every given criterion must hold (``None``: no criterion).
    ``named``: the ids of the bookmarks (what ``bookmarks`` keeps)."""
    tool = spec.tool or None
    path = spec.path or None
    text = (spec.text or "").casefold() or None
    if tool is None and path is None and text is None and not spec.bookmarks:
        return None

    def match(row: Row, turn: StoryTurn | None) -> bool:
        cp = row.checkpoint
        if spec.bookmarks and cp.id not in named:
            return False
        if tool is not None and cp.tool != tool:
            return False
        if path is not None and not any(
            path in f.path or (f.old_path is not None and path in f.old_path) for f in cp.files
        ):
            return False
        if text is None:
            return True
        words = (row.title, row.summary, turn.prompt if turn is not None else "")
        return any(text in w.casefold() for w in words)

    return match


class StoryPages:
    """One built story, flattened for paging, kept up to date by appends (newest last)."""

    def __init__(self, story: SessionStory, items: StoryItems | None = None) -> None:
        """``story``: a built story; or, with ``items``, its header (counts) and its items."""
        self.story = story.model_copy(update={"items": []}) if story.items else story
        """The story's header: session, counts (``items`` unused)."""
        entries: list[_Entry] = []
        if items is not None:
            for turn, rows in items:
                if turn is None or rows:
                    entries.extend(_Entry(row, turn) for row in rows)
                else:
                    entries.append(_Entry(None, turn))
        for item in story.items:
            if isinstance(item, StoryRow):
                entries.append(_Entry(item, None))
            elif item.rows:
                header = item.model_copy(update={"rows": []})
                entries.extend(_Entry(row, header) for row in item.rows)
            else:
                entries.append(_Entry(None, item))
        self._entries = entries
        self._reindex()

    def _reindex(self) -> None:
        self._position: dict[str, int] = {}
        self._rows_before = [0]
        for index, entry in enumerate(self._entries):
            self._index(entry, index)

    def _index(self, entry: _Entry, index: int) -> None:
        self._position.setdefault(entry.cursor, index)
        if entry.turn is not None:
            self._position.setdefault(entry.turn.turn_id, index)
        self._rows_before.append(self._rows_before[-1] + (entry.row is not None))

    def has(self, cursor: str) -> bool:
        return cursor in self._position

    @property
    def turn_count(self) -> int:
        return self.story.turn_count

    def append_turn(self, turn: StoryTurn) -> None:
        """A turn that has just started (no rows yet), newest."""
        entry = _Entry(None, turn.model_copy(update={"rows": []}))
        self._entries.append(entry)
        self._index(entry, len(self._entries) - 1)
        self.story = self.story.model_copy(update={"turn_count": self.story.turn_count + 1})

    def restate_turn(self, turn_id: str, state: TurnState) -> bool:
        """Another agent's turn moved on (ended, or interrupted by a later prompt): its header
        says so; ``False`` when the story has no such turn."""
        at = self._position.get(turn_id)
        old = self._entries[at].turn if at is not None else None
        if at is None or old is None or old.turn_id != turn_id:
            return False
        new = old.model_copy(update={"state": state})
        for index in range(at, len(self._entries)):
            entry = self._entries[index]
            if entry.turn is old:
                self._entries[index] = _Entry(entry.row, new)
        return True

    def note_activity(self, moment: datetime | None, title: str | None = None) -> None:
        """Another agent's session showed life at ``moment`` (a journal event); ``title``: its
        first prompt, when the story had none."""
        info = self.story.session
        update: dict[str, object] = {"last_activity_at": latest_activity(info.last_activity_at, moment)}
        if title is not None and not info.title:
            update["title"] = title[:200]
        self.story = self.story.model_copy(update={"session": info.model_copy(update=update)})

    def append_row(self, row: Row, turn_id: str | None) -> bool:
        """A row just committed, newest of the story (in its turn when ``turn_id`` is given).
        ``False`` when the turn is not in the story (the caller rebuilds)."""
        if turn_id is None:
            entry = _Entry(row, None)
            self._entries.append(entry)
            self._index(entry, len(self._entries) - 1)
        else:
            at = self._position.get(turn_id)
            if at is None:
                return False
            turn = self._entries[at].turn
            last = max(i for i, e in enumerate(self._entries[at:], at) if e.turn is turn)
            if self._entries[last].row is None:  # the turn's placeholder: it has a row now
                self._entries[last] = _Entry(row, turn)
                self._reindex()
            elif last == len(self._entries) - 1:  # the newest turn: the common case, O(1)
                self._entries.append(_Entry(row, turn))
                self._index(self._entries[-1], last + 1)
            else:  # a row in place came in between: the turn's rows stay together
                self._entries.insert(last + 1, _Entry(row, turn))
                self._reindex()
        count = self.story.row_count + 1
        update: dict[str, object] = {"checkpoint_count": count}
        if self.story.session.agent is not None:  # a sign of life of the agent
            moment = row.checkpoint.created_at
            update["last_activity_at"] = latest_activity(self.story.session.last_activity_at, moment)
        info = self.story.session.model_copy(update=update)
        self.story = self.story.model_copy(update={"row_count": count, "session": info})
        return True

    def open_turn(self) -> StoryTurn | None:
        """Another agent's story: its latest turn when no ``turnEnd`` closed it (the newest turn
        header is the last one in story order)."""
        if self.story.session.agent is None:
            return None
        turn = next((e.turn for e in reversed(self._entries) if e.turn is not None), None)
        return turn if turn is not None and turn.state == "running" else None

    def running_agent(self, now: datetime) -> bool:
        """Another agent's story whose latest turn runs now (open, and alive within the idle limit)."""
        turn = self.open_turn()
        if turn is None:
            return False
        last = self.story.session.last_activity_at
        return turn_state(ended=False, latest=True, last_activity=last, now=now) == "running"

    def entry(self, cursor: str) -> tuple[StoryRow | None, StoryTurn | None]:
        """The row (and its turn) of a checkpoint id; (``None``, ``None``) when not in the story."""
        at = self._position.get(cursor)
        if at is None:
            return None, None
        entry = self._entries[at]
        return (made(entry.row) if entry.row is not None else None), entry.turn

    def set_head(self, checkpoint_id: str, is_head: bool) -> None:
        at = self._position.get(checkpoint_id)
        if at is None:
            return
        entry = self._entries[at]
        row = entry.row
        if row is not None and row.is_head != is_head:
            if isinstance(row, RowSeed):
                moved: Row = row.with_head(is_head)
            else:
                moved = row.model_copy(update={"is_head": is_head})
            self._entries[at] = _Entry(moved, entry.turn)

    def page(self, max_rows: int, before: str | None = None, match: Matcher | None = None) -> SessionStory:
        end = len(self._entries) if before is None else self._position[before]
        if match is None:
            return self._page_of(self._entries, end, max_rows, self.story.row_count, self._rows_before)
        chosen = [e for e in self._entries if e.row is not None and match(e.row, e.turn)]
        cut = sum(1 for e in chosen if self._position[e.cursor] < end)
        return self._page_of(chosen, cut, max_rows, len(chosen), range(len(chosen) + 1))

    def _page_of(
        self, entries: Sequence[_Entry], end: int, max_rows: int, total: int, rows_before: Sequence[int]
    ) -> SessionStory:
        start, rows = end, 0
        while start > 0:
            if entries[start - 1].row is not None:
                if rows == max_rows:
                    break
                rows += 1
            start -= 1
        older = rows_before[start]
        return self.story.model_copy(
            update={
                "items": _regroup(entries[start:end]),
                "row_count": total,
                "rows_omitted": older,
                "next_before": entries[start].cursor if older else None,
                "outline": False,
            }
        )

    def outline(self) -> SessionStory:
        """The story without items: its session and counts only (ask for its newest page)."""
        return self.story.model_copy(
            update={"items": [], "rows_omitted": self.story.row_count, "next_before": None, "outline": True}
        )


def _regroup(entries: Sequence[_Entry]) -> list[StoryTurn | StoryRow]:
    items: list[StoryTurn | StoryRow] = []
    for entry in entries:
        row = made(entry.row) if entry.row is not None else None
        if entry.turn is None:
            assert row is not None
            items.append(row)
            continue
        last = items[-1] if items else None
        if isinstance(last, StoryTurn) and last.turn_id == entry.turn.turn_id and row is not None:
            last.rows.append(row)
        else:
            items.append(entry.turn.model_copy(update={"rows": [row] if row is not None else []}))
    return items


class UnknownCursorError(LookupError):
    """A ``before`` cursor that names no row or turn of the story."""


WORKSPACE_IN_SIGHT = 50
"""An outline pages the workspace story beside the focus while it has at most this many rows: it
holds the baseline (the state before any agent ran), the row a user goes back to; a workspace
story grown long (many changes outside sessions) is an outline like any other."""


def focus_of(stories: Sequence[SessionStory], running: frozenset[str], focus: str | None) -> str | None:
    """The session an outline answer pages: ``focus`` if it has an agent story with rows (a
    client's active session may have none yet, or be the workspace's), else a running agent
    session, else the newest agent session with rows, else the newest story with rows (the
    workspace's baseline before a fresh chat's first prompt), else the newest story."""
    # A session with no rows that is not running (the chat's fresh session) shows nothing when
    # paged: it never takes the page from the story the user came to see.
    agent = [s for s in stories if not s.workspace]
    live = [s.session.id for s in agent if s.row_count or s.session.id in running]
    if focus is not None and focus in live:
        return focus
    busy = [s.session.id for s in agent if s.session.id in running]
    shown = [s.session.id for s in stories if s.row_count]
    candidates = busy or live or shown or [s.session.id for s in stories]
    return candidates[-1] if candidates else None


def agents_running(pages: Sequence[StoryPages], now: datetime) -> frozenset[str]:
    """The stories of other agents whose latest turn runs now (see :mod:`.agents`)."""
    return frozenset(p.story.session.id for p in pages if p.running_agent(now))


def session_list(pages: Sequence[StoryPages], running: frozenset[str], now: datetime) -> list[SessionInfo]:
    """What ``retrace/session/list`` answers: every story's session (oldest first) with
    ``running`` set for Retrace's own running turns (``running``) and other agents' live turns;
    then each running session that has no story yet — a new session's turn is running from the
    moment its prompt is answered, before it has written its first journal line — so "is anything
    running?" never reads "no" while a turn is starting."""
    agents = agents_running(pages, now)
    infos = [p.story.session for p in pages]
    listed = {i.id for i in infos}
    starting = [
        SessionInfo(id=sid, title="", created_at=None, running=True, checkpoint_count=0)
        for sid in sorted(running - listed)
    ]
    return [i.model_copy(update={"running": i.id in running or i.id in agents}) for i in infos] + starting


def select(
    pages: Sequence[StoryPages],
    params: TimelineTreeParams,
    running: frozenset[str] = frozenset(),
    now: datetime | None = None,
    named: Mapping[str, str] | None = None,
) -> list[SessionStory]:
    """What a ``retrace/timeline/tree`` request gets, from every built story (oldest first).

    ``running``: Retrace's own sessions running a turn; other agents' running turns are found
    here (as of ``now``, default the clock): their sessions are ``running``, and an open turn of
    one that is not is sent ``interrupted``.

    ``sessionId``: only that story (none when unknown); ``before``: the page older than the
    cursor (:class:`UnknownCursorError` when the story does not have it); ``filter``: matching rows
    only, stories without a match left out (``outline`` is ignored then); ``outline``: every
    story but the focus (and a small workspace story) as an outline. ``named``: the bookmarks
    (checkpoint id → name), stamped on the rows sent."""
    named = named or {}
    match = matcher(params.filter, named) if params.filter is not None else None
    running = running | agents_running(pages, now or datetime.now(UTC))
    chosen = [p for p in pages if params.session_id is None or p.story.session.id == params.session_id]
    focus = focus_of([p.story for p in pages], running, params.focus) if params.outline else None
    out: list[SessionStory] = []
    for story_pages in chosen:
        sid = story_pages.story.session.id
        in_sight = sid == focus or (
            story_pages.story.workspace and story_pages.story.row_count <= WORKSPACE_IN_SIGHT
        )
        if params.outline and match is None and not in_sight:
            out.append(story_pages.outline())
            continue
        try:
            story = story_pages.page(params.max_rows, params.before, match)
        except KeyError:
            raise UnknownCursorError(params.before) from None
        if match is None or story.row_count > 0:
            out.append(story)
    return [stamp_bookmarks(_stamp(s, running), named) for s in out]


def _stamp(story: SessionStory, running: frozenset[str]) -> SessionStory:
    now = story.session.id in running
    if story.session.agent is not None and not now:
        # Another agent's open turn that shows no life (or that a later prompt followed).
        items = [
            i.model_copy(update={"state": "interrupted"})
            if isinstance(i, StoryTurn) and i.state == "running"
            else i
            for i in story.items
        ]
        story = story.model_copy(update={"items": items})
    if story.session.running == now:
        return story
    return story.model_copy(update={"session": story.session.model_copy(update={"running": now})})
