"""The built timeline of one engine, kept between requests and updated in place, so a page costs
O(page) and a tool call O(1).

A full build folds every session journal (its events but the checkpoints, validated: the
dominant cost, seconds at 10,000 checkpoints) and describes every checkpoint. Given a persisted
cache (:mod:`.persist`), a journal unchanged since it was written is not read: its facts and its
tool rows' words come from the file (a re-opened server answers its first request in a fraction
of the time); :meth:`snapshot` writes the file again after a build folded journals, at most once
per ``save_every`` seconds, on whatever thread the caller picks.

:class:`TimelineCache` builds once, keeps each session's facts, and afterwards only appends:
checkpoints committed since the last answer are described (their tool call from the caller's
``tool_of``, e.g. the agent's replay buffer) and placed; a turn announced with :meth:`note_turn`
becomes an empty turn of its story. Contracts:

* anything else that changes a journal without a checkpoint (a conversation restore, a summary)
  must be announced with :meth:`invalidate` (the LSP host does, for those agent events): the next
  request rebuilds, re-reading only the journals of the sessions marked or appended to;
* a checkpoint list that is not an extension of the one built (pruned, reloaded) rebuilds;
* a rebuild equals the incremental result, and an answer from the persisted cache equals a
  build from the journals (tests compare them);
* a session whose facts came from the persisted cache has no tool inputs: a tool row appended
  to it that ``tool_of`` does not know makes that journal be folded again;
* "running" is not part of the build (it changes without any journal write):
  :func:`~retrace.app.timeline.pages.select` stamps it on what it sends;
* call it from the engine's thread only (the engine gate): it is not locked.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from retrace.app.timeline.agents import first_agent, from_ts, latest_activity
from retrace.app.timeline.facts import (
    UNUSED_EVENTS,
    FactsFold,
    FoldState,
    SessionFacts,
    ToolFact,
    TurnFact,
    parse_time,
)
from retrace.app.timeline.pages import StoryPages
from retrace.app.timeline.persist import SessionRecord, encode_records, load_records, save_records
from retrace.app.timeline.story import owner_of, row_agent, row_seed, story_items
from retrace.engine import Engine
from retrace.engine.models import Checkpoint
from retrace.engine.store.cursor import CursorRead, JournalCursor, JournalMark, untouched
from retrace.engine.store.events import JournalEvent, TurnEndEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout
from retrace.protocol.models import TimelineDidChange
from retrace.protocol.timeline import SessionInfo, SessionStory, StoryTurn

ALL_ROWS = 1 << 40
ToolLookup = Callable[[str, str], ToolFact | None]
"""(session id, tool call id) → the tool call, when the caller knows it."""


def _no_tools(_session: str, _call: str) -> ToolFact | None:
    return None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


class _TurnFold:
    """Another agent's session facts, folded on with its prompts and turn ends in place."""

    def __init__(self, facts: SessionFacts) -> None:
        self.base = facts
        self.turns = list(facts.turns)
        self.seen = {t.turn_id for t in facts.turns}
        self.ended = set(facts.ended_turns)
        self.last = facts.last_event_at

    def feed(self, event: TurnEvent | TurnEndEvent, pages: StoryPages) -> bool:
        turn_id = event.turn_id
        moment = from_ts(event.ts)
        self.last = latest_activity(self.last, moment)
        if isinstance(event, TurnEndEvent):
            if turn_id not in self.ended and turn_id in self.seen:
                self.ended.add(turn_id)
                if not pages.restate_turn(turn_id, "ended"):
                    return False
            else:
                self.ended.add(turn_id)
            pages.note_activity(moment)
            return True
        if turn_id in self.seen:  # a repeated prompt event: one turn, still a sign of life
            pages.note_activity(moment)
            return True
        previous = self.turns[-1].turn_id
        if previous not in self.ended and not pages.restate_turn(previous, "interrupted"):
            return False
        prompt = event.text
        began = parse_time(event.created_at) or moment
        self.turns.append(TurnFact(turn_id, prompt, began, None))
        self.seen.add(turn_id)
        number = pages.turn_count + 1
        pages.append_turn(
            StoryTurn(
                turn_id=turn_id,
                number=number,
                prompt=prompt,
                created_at=began,
                abandoned=False,
                forked_from=None,
                rows=[],
                state="ended" if turn_id in self.ended else "running",
            )
        )
        pages.note_activity(moment, prompt or None)
        return True

    def facts(self) -> SessionFacts:
        return replace(
            self.base, turns=self.turns, ended_turns=frozenset(self.ended), last_event_at=self.last
        )


@contextmanager
def _no_collection() -> Iterator[None]:
    """No cyclic garbage collection inside: a build allocates some 10 objects per checkpoint and
    no cycles, and each collection it would trigger walks the engine's whole heap (a third of a
    10,000-checkpoint build's time). Collection resumes, as it was, afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class TimelineCache:
    def __init__(self, persisted: Path | None = None, save_every: float = 0.0) -> None:
        """``persisted``: the file of the persisted cache (see :mod:`.persist`), read at the first
        build and written by :meth:`snapshot` (``None``: nothing persisted); ``save_every``: at
        most one snapshot per that many seconds."""
        self._path = persisted
        self._save_every = save_every
        self._saved_at = -float("inf")
        self._saved: dict[str, SessionRecord] | None = None
        """The persisted records not used yet (loaded at the first build)."""
        self._marks: dict[str, tuple[JournalMark, FoldState]] = {}
        """Per session: the journal identity its facts were folded at (none: not persistable)."""
        self._words: dict[str, Mapping[str, tuple[str, str]]] = {}
        """Per session whose facts came from a record: its tool rows' words."""
        self._tool_rows: dict[str, list[Checkpoint]] = {}
        self._unsaved = False
        self.folds = 0
        """How many journals were folded whole (tests check a warm start folds none)."""
        self.tail_folds = 0
        """How many folds went on from a persisted record with the lines appended since."""
        self._facts: dict[str, SessionFacts] = {}
        self._dirty: set[str] = set()
        self._stale = True
        self._count = 0
        self._last: str | None = None
        self._head: str | None = None
        self._pages: dict[str, StoryPages] = {}
        self._owners: dict[str, str] = {}
        self._described: dict[str, tuple[str, str]] = {}
        self._pending: list[tuple[str, StoryTurn]] = []
        self.builds = 0
        """How many full builds were made (tests check appends do not rebuild)."""
        self._watching: dict[str, JournalCursor] = {}
        """Per other agent's session: a cursor at the end of what its facts account for (see
        :meth:`_watch`)."""
        self._own: set[str] = set()
        """Sessions known to be Retrace's own (their journal does not start with ``agentSession``)."""

    def invalidate(self, session_id: str | None = None) -> None:
        """Journal events were written that no append covers: rebuild on the next request,
        re-reading ``session_id``'s journal (every journal when ``None``)."""
        self._stale = True
        if session_id is None:
            self._facts.clear()
        else:
            self._dirty.add(session_id)

    def note_turn(self, session_id: str, turn_id: str, prompt: str, created_at: datetime | None) -> None:
        """A turn started: it shows as the newest (empty) turn of its session's story, after the
        checkpoints committed before ``created_at``."""
        pages = self._pages.get(session_id)
        self._dirty.add(session_id)
        if self._stale or (pages is not None and pages.story.workspace):
            self.invalidate(session_id)
            return
        if pages is None:  # a new session: its story starts now, newest of all
            info = SessionInfo(
                id=session_id, title=prompt[:200], created_at=created_at, running=False, checkpoint_count=0
            )
            story = SessionStory(
                session=info, workspace=False, turn_count=0, row_count=0, rows_omitted=0, items=[]
            )
            self._pages[session_id] = StoryPages(story)
        turn = StoryTurn(
            turn_id=turn_id,
            number=0,
            prompt=prompt,
            created_at=created_at,
            abandoned=False,
            forked_from=None,
            rows=[],
        )
        self._pending.append((session_id, turn))

    def _flush_turns(self, until: datetime | None) -> None:
        """Place the noted turns that started before ``until`` (all when ``None``)."""
        while self._pending:
            session_id, turn = self._pending[0]
            if until is not None and turn.created_at is not None and turn.created_at > until:
                return
            self._pending.pop(0)
            pages = self._pages.get(session_id)
            if pages is not None and not pages.has(turn.turn_id):
                pages.append_turn(turn.model_copy(update={"number": pages.turn_count + 1}))

    @property
    def ready(self) -> bool:
        """Built and not stale: an update costs only the new checkpoints."""
        return not self._stale and self.builds > 0

    def change(self, engine: Engine, checkpoint: Checkpoint, tool_of: ToolLookup) -> TimelineDidChange | None:
        """The notification for a committed checkpoint, from the updated stories (its row described
        as the tree shows it, with its story and turn); ``None`` when the cache is not built (then
        building it would cost more than the client's own placing)."""
        if not self.ready:
            return None
        self.stories(engine, tool_of)
        key = self._story_key(self._owners.get(checkpoint.id, ""))
        pages = self._pages.get(key) if key is not None else None
        row, turn = pages.entry(checkpoint.id) if pages is not None else (None, None)
        if row is None:
            return None
        header = turn.model_copy(update={"rows": []}) if turn is not None else None
        return TimelineDidChange(
            head=self._head,
            checkpoint=checkpoint,
            row=row,
            turn_id=turn.turn_id if turn is not None else None,
            story_id=key,
            turn=header,
        )

    def stories(self, engine: Engine, tool_of: ToolLookup = _no_tools) -> dict[str, StoryPages]:
        """Every story by session id, oldest first, as of the engine's state now."""
        checkpoints = engine.timeline()
        head = engine.head.id
        if self.ready:
            self._watch(engine)
        extends = 0 < self._count <= len(checkpoints) and checkpoints[self._count - 1].id == self._last
        if self._stale or not extends or not self._append(checkpoints[self._count :], tool_of):
            with _no_collection():
                self._build(engine, checkpoints, head)
        self._flush_turns(None)
        if head != self._head:
            self._move_head(head)
        self._count, self._last = len(checkpoints), checkpoints[-1].id if checkpoints else None
        return self._pages

    def _build(self, engine: Engine, checkpoints: Sequence[Checkpoint], head: str | None) -> None:
        layout = StoreLayout(engine.store_dir)
        if self._saved is None:
            self._saved = load_records(self._path) if self._path is not None else {}
        tool_rows: dict[str, list[Checkpoint]] = {}
        for cp in checkpoints:
            if cp.kind == "tool":
                tool_rows.setdefault(cp.session_id, []).append(cp)
        sessions = engine.sessions()
        for sid in sessions:
            if sid not in self._facts or sid in self._dirty:
                journal = layout.journal(sid)
                facts, mark = self._fold(journal, sid, tool_rows.get(sid, ()))
                self._facts[sid] = facts
                self._watching.pop(sid, None)
                if facts.agent is not None and mark is not None:
                    self._watching[sid] = JournalCursor(journal, mark.as_tail(), skip=UNUSED_EVENTS)
        present = set(sessions)
        for sid in [s for s in self._watching if s not in present]:
            del self._watching[sid]
        for sid in [s for s in self._facts if s not in present]:
            del self._facts[sid]
            self._unsaved = True
        self._tool_rows = tool_rows
        self._dirty.clear()
        self._described = {}
        built = story_items(checkpoints, head, self._facts, described=self._described)
        self._pages = {story.session.id: StoryPages(story, items) for story, items in built}
        agent = {sid for sid, f in self._facts.items() if f.is_agent_session}
        self._owners = {}
        for cp in checkpoints:
            self._owners[cp.id] = owner_of(cp, agent, self._owners)
        self._head, self._stale = head, False
        self._pending.clear()  # the journals had them
        self.builds += 1

    def _fold(
        self, journal: Path, sid: str, tool_rows: Sequence[Checkpoint]
    ) -> tuple[SessionFacts, JournalMark | None]:
        """The facts of one session and the journal mark they stand at: from its persisted
        record when the journal is untouched since (and the record words every tool row); the
        record folded on with the events appended since when the journal only grew; else folded
        from the whole journal (the journal cursor decides, :mod:`retrace.engine.store.cursor`)."""
        record = self._saved.pop(sid, None) if self._saved is not None else None
        self._marks.pop(sid, None)
        self._words.pop(sid, None)
        if (
            record is not None
            and all(cp.id in record.rows for cp in tool_rows)
            and untouched(record.mark, journal)
        ):
            self._marks[sid], self._words[sid] = (record.mark, record.state), record.rows
            return record.facts, record.mark
        self._unsaved = self._unsaved or self._path is not None
        cursor = JournalCursor(
            journal, record.mark if record is not None else None, check="prefix", skip=UNUSED_EVENTS
        )
        read = cursor.read()
        fold = self._fold_on(record, read, tool_rows) if record is not None else None
        resumed = fold is not None
        if fold is None:
            if record is not None and not read.restarted:  # the record cannot go on: all of it
                cursor = JournalCursor(journal, check="prefix", skip=UNUSED_EVENTS)
                read = cursor.read()
            fold = FactsFold(sid).feed(read.events)
            self.folds += 1
        else:
            self.tail_folds += 1
        facts = fold.facts()
        if resumed and record is not None:  # the older tool rows keep their words
            facts.words = dict(record.rows)
        if cursor.mark is not None:
            self._marks[sid] = (cursor.mark, fold.state())
        return facts, cursor.mark

    @staticmethod
    def _fold_on(
        record: SessionRecord, read: CursorRead, tool_rows: Sequence[Checkpoint]
    ) -> FactsFold | None:
        """``record``'s fold continued with the events ``read`` (appended since); ``None`` when
        the journal did not just grow, or a tool row it does not word has its call among those
        whose input the record does not keep."""
        if not read.grew:
            return None
        try:
            fold = FactsFold.resume(record.facts, record.state)
        except ValueError:  # a malformed record: the whole journal, then
            return None
        fold.feed(read.events)
        unworded = (cp.tool_call_id for cp in tool_rows if cp.id not in record.rows)
        if any(call in fold.no_input for call in unworded):
            return None
        return fold

    def _watch(self, engine: Engine) -> None:
        """Other agents write their sessions' journals through hooks, without telling this cache
        (:meth:`note_turn` or not): a session that appeared since the build is read at the next
        build; what another agent's journal gained besides checkpoints is placed in place when it
        is prompts and turn ends (:meth:`_turns_in_place`), else that journal is read again at
        the next build. Costs one listing of the sessions folder and, per other agent's session,
        a stat (and a read of what was appended): nothing that grows with the history."""
        layout = StoreLayout(engine.store_dir)
        try:
            names = [p.name for p in layout.sessions.iterdir()]  # names only: no stat per session
        except OSError:
            names = []
        for sid in names:
            if sid in self._facts or sid in self._own:
                continue
            agent = first_agent(engine, sid)
            if agent is None:
                self._own.add(sid)
            elif agent:
                self.invalidate(sid)
        for sid, cursor in list(self._watching.items()):
            try:
                read = cursor.read()
            except OSError:
                read = CursorRead(restarted=True)
            if read.restarted or read.damaged or read.unknown:
                self.invalidate(sid)
                continue
            if read.events and not self._turns_in_place(sid, read.events):
                self.invalidate(sid)

    def _turns_in_place(self, sid: str, events: Sequence[JournalEvent]) -> bool:
        """Another agent's prompts and turn ends appended to its journal, placed in its story as
        a rebuild would (a prompt: a new running turn, newest, the open one before it
        interrupted; an end: its turn ended); ``False`` when something else was appended, or the
        story cannot take them in place (the caller rebuilds)."""
        facts, pages = self._facts.get(sid), self._pages.get(sid)
        if facts is None or pages is None or facts.agent is None or not facts.turns:
            return False
        turns = [e for e in events if isinstance(e, TurnEvent | TurnEndEvent)]
        if len(turns) != len(events):
            return False
        fold = _TurnFold(facts)
        for event in turns:
            if not fold.feed(event, pages):
                return False
        self._facts[sid] = fold.facts()
        self._marks.pop(sid, None)  # not the folded journal any more: never persisted as such
        self._dirty.add(sid)
        return True

    def snapshot(self, now: float | None = None) -> Callable[[], bool] | None:
        """What writing the persisted cache takes, as a call that may run on any thread (the
        state it writes is captured now), or ``None`` when there is nothing new to write (or the
        last snapshot is younger than ``save_every``). Call it from the engine's thread."""
        moment = time.monotonic() if now is None else now
        if self._path is None or not self._unsaved or moment - self._saved_at < self._save_every:
            return None
        records: dict[str, SessionRecord] = {}
        keep = {sid: [cp.id for cp in cps] for sid, cps in self._tool_rows.items()}
        for sid, (mark, state) in self._marks.items():
            # A session appended to since is written as folded at ``mark`` all the same (its
            # facts are not touched by appends): the next start folds on from there.
            facts = self._facts.get(sid)
            if facts is None:
                continue
            words = self._words.get(sid)
            rows = words if words is not None else {c: self._described[c] for c in keep.get(sid, ())}
            records[sid] = SessionRecord(mark, facts, state, rows)
        path = self._path
        self._unsaved, self._saved_at = False, moment
        return lambda: save_records(path, encode_records(records, keep))

    def _story_key(self, owner: str) -> str | None:
        if owner:
            return owner if owner in self._pages else None
        workspace = [sid for sid, p in self._pages.items() if p.story.workspace]
        return workspace[0] if workspace else None

    def _append(self, new: Sequence[Checkpoint], tool_of: ToolLookup) -> bool:
        """Place checkpoints committed since the last answer; ``False``: one cannot be placed."""
        agent = {sid for sid, p in self._pages.items() if not p.story.workspace}
        for cp in new:
            # Its journal grew: the next rebuild reads it again (also when this append fails).
            self._dirty.add(cp.session_id)
            self._flush_turns(cp.created_at)
            owner = self._owners[cp.id] = owner_of(cp, agent, self._owners)
            key = self._story_key(owner)
            if key is None:
                return False
            tool = self._tool(cp, tool_of)
            if self._inputs_missing(cp, tool):
                return False
            row = row_seed(
                cp, tool, self._described, None, agent=row_agent(cp, self._facts.get(cp.session_id))
            )
            in_turn = cp.turn_id if cp.turn_id is not None and owner == cp.session_id else None
            if not self._pages[key].append_row(row, in_turn):
                return False
        return True

    def story_of(self, checkpoint_id: str | None) -> str | None:
        """The session id of the story holding a checkpoint (as of the last update)."""
        owner = self._owners.get(checkpoint_id or "")
        return self._story_key(owner) if owner is not None else None

    def _tool(self, cp: Checkpoint, tool_of: ToolLookup) -> ToolFact | None:
        if cp.tool_call_id is None:
            return None
        known = self._facts.get(cp.session_id)
        fact = tool_of(cp.session_id, cp.tool_call_id)
        return fact or (known.tools.get(cp.tool_call_id) if known is not None else None)

    def _inputs_missing(self, cp: Checkpoint, tool: ToolFact | None) -> bool:
        """A tool row whose tool call is known only from the persisted cache (no input to
        describe it from): the session's journal is folded again instead."""
        known = self._facts.get(cp.session_id)
        if cp.kind != "tool" or known is None or known.inputs:
            return False
        return tool is None or tool is known.tools.get(cp.tool_call_id or "")

    def _move_head(self, head: str) -> None:
        for cid, is_head in ((self._head, False), (head, True)):
            owner = self._owners.get(cid or "")
            key = self._story_key(owner) if owner is not None else None
            if key is not None and cid is not None:
                self._pages[key].set_head(cid, is_head)
        self._head = head
