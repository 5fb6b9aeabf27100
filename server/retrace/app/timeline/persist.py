"""The timeline's persisted cache: what a re-opened server needs to answer its first timeline
request without reading every session journal (``<store>/cache/timeline.json``).

Per session journal it records where the fold stopped reading it (a journal cursor's ``prefix``
mark, :class:`~retrace.engine.store.cursor.JournalMark`) and what the story takes from
the journal besides the checkpoints: the turns, the abandoned turns, each tool call's tool and
final status, and the (title, summary) of the session's tool rows (the only rows whose words
need the journal: a tool call's input); for another agent's session, the agent, the turns that
ended and when its last event was written; and where the fold stopped (:class:`FoldState`: the
conversation's message graph and head, a restore not yet followed by a turn), so that a journal
that only grew is read from there on. Tool inputs and message contents are not kept (they can
be the size of the files written).

Contracts:

* The journals stay the only source of truth. The journal cursor decides
  (:mod:`retrace.engine.store.cursor`): a session's record is used as it is when its journal is
  untouched since the mark; a journal that only grew (same file, every byte before the mark
  unchanged by digest) is folded on from the record with the events appended since, unless a
  tool row among them needs an input the record does not keep (a call that was running when the
  file was written). Anything else — a shrunk, replaced or rewritten journal — means that
  session is folded from its whole journal again.
* Never required: a file that is missing, unreadable (a torn or partial file does not parse),
  of another version or malformed is ignored as a whole (every session is folded).
* Facts made from a record have no tool inputs (:attr:`SessionFacts.inputs`): the cache never
  describes a new row from them (it folds that journal again instead).
* Written whole and atomically through :func:`~retrace.engine.store.cache_file.write_cache_json`;
  a failed write is logged, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from retrace.app.timeline.facts import FoldState, SessionFacts, ToolFact, TurnFact, parse_time
from retrace.engine.store.cache_file import read_cache_json, write_cache_json
from retrace.engine.store.cursor import JournalMark

VERSION = 3
"""2: another agent's sessions (``agent``, ended turns, last event time); 3: journal cursor marks."""
FILE_NAME = "timeline.json"
WHAT = "timeline cache"

Described = tuple[str, str]


@dataclass(frozen=True)
class SessionRecord:
    """One session's journal facts as folded at ``mark``, where that fold stopped (to go on
    from there when the journal grew) and its tool rows' words."""

    mark: JournalMark
    facts: SessionFacts
    state: FoldState
    rows: Mapping[str, Described]
    """Checkpoint id → (title, summary) of the session's tool rows."""

    def to_json(self, keep: Iterable[str]) -> dict[str, object]:
        """The record, with the rows of the checkpoints in ``keep`` only (retention drops some)."""
        f = self.facts
        turns = [
            [t.turn_id, t.prompt, t.created_at.isoformat() if t.created_at else None, t.forked_from]
            for t in f.turns
        ]
        tools = list(f.tools.values())
        rows = [cid for cid in keep if cid in self.rows]
        return {  # columns: one list of strings per field decodes several times faster than rows
            "mark": self.mark.to_json(),
            "turns": turns,
            "abandoned": sorted(f.abandoned_turns),
            "head": self.state.head,
            "fork": self.state.fork,
            "messages": list(self.state.messages),
            "tools": [[t.call_id for t in tools], [t.tool for t in tools], [t.status for t in tools]],
            "rows": [rows, [self.rows[c][0] for c in rows], [self.rows[c][1] for c in rows]],
            "agent": f.agent,
            "ended": sorted(f.ended_turns),
            "lastEventAt": f.last_event_at.isoformat() if f.last_event_at else None,
        }


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _columns(raw: object, width: int) -> list[list[Any]]:
    """``width`` equally long lists of strings (``None`` allowed after the first)."""
    columns = _lists(raw, width)
    if not all(isinstance(v, str) for v in columns[0]) or not all(
        v is None or isinstance(v, str) for c in columns[1:] for v in c
    ):
        raise TypeError("a column holds something else than strings")
    return columns


def _lists(raw: object, width: int) -> list[list[Any]]:
    """``width`` equally long lists."""
    if not isinstance(raw, list) or len(raw) != width or not all(isinstance(c, list) for c in raw):
        raise TypeError("malformed columns")
    if len({len(c) for c in raw}) != 1:
        raise ValueError("columns of different lengths")
    return raw


NO_INPUT: Mapping[str, Any] = MappingProxyType({})
"""The input of a tool call known from a record (none kept): one shared empty mapping."""


def _record(sid: str, raw: Any, share: Callable[[Any, Any], Any]) -> SessionRecord:
    """One session's record; ``share(v, v)``: ``v``, or the equal string met before (a record
    repeats roles, kinds, turn ids, parents, tool names and titles thousands of times: held once)."""
    facts = SessionFacts(sid, inputs=False)
    for turn_id, prompt, created_at, forked_from in raw["turns"]:
        facts.turns.append(
            TurnFact(_str(turn_id), _str(prompt), parse_time(created_at), _opt_str(forked_from))
        )
    facts.abandoned_turns = {_str(t) for t in raw["abandoned"]}
    facts.agent = _opt_str(raw["agent"])
    facts.ended_turns = frozenset(_str(t) for t in raw["ended"])
    facts.last_event_at = parse_time(_opt_str(raw["lastEventAt"]))
    ids, tools, statuses = _columns(raw["tools"], 3)
    facts.tools = {
        cid: ToolFact(cid, share(tool, tool), NO_INPUT, share(st, st))
        for cid, tool, st in zip(ids, tools, statuses, strict=True)
    }
    ids, titles, summaries = _columns(raw["rows"], 3)
    rows = {cid: (share(t, t), s) for cid, t, s in zip(ids, titles, summaries, strict=True)}
    facts.words = rows
    columns = _lists(raw["messages"], 5)  # their values are checked if a fold resumes
    ids, parents, roles, turn_ids, kinds = ([share(v, v) for v in column] for column in columns)
    state = FoldState(_opt_str(raw["head"]), _opt_str(raw["fork"]), (ids, parents, roles, turn_ids, kinds))
    return SessionRecord(JournalMark.from_json(raw["mark"]), facts, state, rows)


def _records(raw: object) -> dict[str, SessionRecord]:
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        raise ValueError("another timeline cache version")
    sessions = raw["sessions"]
    if not isinstance(sessions, dict):
        raise TypeError("sessions is not an object")
    seen: dict[Any, Any] = {}
    share = seen.setdefault  # an unhashable value (a malformed file) raises TypeError: ignored whole
    return {str(sid): _record(str(sid), rec, share) for sid, rec in sessions.items()}


def load_records(path: Path) -> dict[str, SessionRecord]:
    """The records at ``path``; none when the file cannot be used (every journal is folded)."""
    return read_cache_json(path, _records, WHAT) or {}


def encode_records(
    records: Mapping[str, SessionRecord], checkpoints: Mapping[str, list[str]]
) -> dict[str, object]:
    """The file's body (``checkpoints``: session id → its checkpoint ids now, to keep their rows)."""
    sessions = {sid: rec.to_json(checkpoints.get(sid, ())) for sid, rec in sorted(records.items())}
    return {"version": VERSION, "sessions": sessions}


def save_records(path: Path, body: dict[str, object]) -> bool:
    """Write an :func:`encode_records` body atomically; ``False`` (logged) when it could not be."""
    return write_cache_json(path, body, WHAT)
