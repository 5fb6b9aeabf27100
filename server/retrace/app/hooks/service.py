"""Applying one external agent's hook event to the engine (the contract of issue 27).

A session of the agent is ONE Retrace session (:func:`~retrace.app.hooks.model.session_id_for`)
whose first journal line is ``agentSession``. A prompt ends a turn still running (the agent was
interrupted: no stop came) and starts one (``turn``); before a tool runs, what nobody announced
since the head is recorded as an ``external`` checkpoint, so the tool's checkpoint holds exactly
what the call changed; after it, ONE ``tool`` checkpoint (the named file(s) of a file-writing
tool, nothing for a read-only one, detected changes for a shell or unknown tool); a stop ends the
turn (``turnEnd``). A tool call outside any turn opens an implicit one. Paths outside the
workspace are dropped (noted); an event whose ``cwd`` is outside the workspace is refused
(:class:`~retrace.app.hooks.model.HookRefused`); a tool call already recorded (the same
``tool_use_id``, e.g. a retry after a server died mid-call) is not recorded twice.

:class:`HookService` runs on the engine's thread (the server's gate, or the command line's own
open) and remembers, per session, the running turn and the tool calls recorded, read once from
the journal: the engine's owner is the only writer of its journals.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from retrace.agent.side_effects import side_effect_meta
from retrace.app.hooks.model import HookEvent, HookRefused, session_id_for
from retrace.engine.engine import Engine
from retrace.engine.errors import PathOutsideWorkspace
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import AgentSessionEvent, TurnEndEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout

INTERRUPTED = "interrupted"
"""The ``turnEnd`` reason of a turn a new prompt found still running."""
TAIL_BYTES = 64 << 10
"""The journal tail read first for the running turn."""


@dataclass(frozen=True)
class TurnBegan:
    turn_id: str
    text: str


@dataclass(frozen=True)
class TurnClosed:
    turn_id: str
    reason: str


@dataclass(frozen=True)
class Recorded:
    checkpoint: Checkpoint
    turn_id: str | None


HookStep = TurnBegan | TurnClosed | Recorded


@dataclass
class HookOutcome:
    """What applying one event did, in order (the server tells the editor each step), and what
    the log should say (``notes``: dropped paths, ignored fields, duplicates)."""

    session_id: str | None
    steps: list[HookStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    agent: str | None = None
    """The agent whose event this was (``None`` when nothing was recorded)."""

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return [s.checkpoint for s in self.steps if isinstance(s, Recorded)]


@dataclass
class _Session:
    running_turn: str | None = None
    calls: set[str] = field(default_factory=set)


class HookService:
    """Applies hook events to one engine (see the module docstring)."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def apply(self, engine: Engine, event: HookEvent) -> HookOutcome:
        if event.kind == "ignored":
            return HookOutcome(None, notes=[f"{event.agent} {event.hook_name}: not recorded"])
        _check_cwd(engine, event)
        sid = session_id_for(event.agent, event.external_session_id)
        out = HookOutcome(
            sid, notes=[f"{event.agent} {event.hook_name}: {w}" for w in event.warnings], agent=event.agent
        )
        state = self._session(engine, sid, event)
        if event.kind == "sessionStart":
            self._external(engine, sid, None, out)
        elif event.kind == "prompt":
            self._close(engine, sid, state, INTERRUPTED, out)
            self._external(engine, sid, None, out)
            self._open(engine, sid, state, event.prompt or "", out)
        elif event.kind == "preTool":
            turn = self._turn(engine, sid, state, out)
            self._external(engine, sid, turn, out)
        elif event.kind == "postTool":
            self._tool(engine, sid, state, event, out)
        else:  # stop, sessionEnd
            self._close(engine, sid, state, event.reason or "stop", out)
        return out

    # ------------------------------------------------------------------ session state
    def _session(self, engine: Engine, sid: str, event: HookEvent) -> _Session:
        state = self._sessions.get(sid)
        if state is not None:
            return state
        state = _Session()
        journal = StoreLayout(engine.store_dir).journal(sid)
        size = journal.stat().st_size if journal.exists() else 0
        state.running_turn = running_turn(engine, sid, size)
        state.calls = {cp.tool_call_id for cp in engine.timeline(sid) if cp.tool_call_id}
        if size == 0 and not state.calls:
            first = AgentSessionEvent(
                agent=event.agent,
                external_session_id=event.external_session_id,
                cwd=event.cwd,
                transcript_path=event.transcript_path,
            )
            engine.append_event(first, session_id=sid)
        self._sessions[sid] = state
        return state

    def _turn(self, engine: Engine, sid: str, state: _Session, out: HookOutcome) -> str:
        """The running turn, or an implicit one opened now (a tool call outside any prompt)."""
        if state.running_turn is not None:
            return state.running_turn
        return self._open(engine, sid, state, "", out, implicit=True)

    def _open(
        self,
        engine: Engine,
        sid: str,
        state: _Session,
        text: str,
        out: HookOutcome,
        *,
        implicit: bool = False,
    ) -> str:
        turn_id = f"turn_{uuid.uuid4().hex[:20]}"
        extra = {"implicit": True} if implicit else {}
        engine.append_event(TurnEvent(turn_id=turn_id, text=text, **extra), session_id=sid)
        state.running_turn = turn_id
        out.steps.append(TurnBegan(turn_id, text))
        return turn_id

    def _close(self, engine: Engine, sid: str, state: _Session, reason: str, out: HookOutcome) -> None:
        turn_id = state.running_turn
        if turn_id is None:
            return
        engine.append_event(TurnEndEvent(turn_id=turn_id, reason=reason[:64]), session_id=sid)
        state.running_turn = None
        out.steps.append(TurnClosed(turn_id, reason[:64]))

    # ------------------------------------------------------------------ checkpoints
    def _external(self, engine: Engine, sid: str, turn_id: str | None, out: HookOutcome) -> None:
        cp = engine.record_foreign("external", {"session_id": sid, "turn_id": turn_id})
        if cp is not None:
            out.steps.append(Recorded(cp, turn_id))

    def _tool(self, engine: Engine, sid: str, state: _Session, event: HookEvent, out: HookOutcome) -> None:
        call_id = event.tool_use_id or f"{event.agent}_{uuid.uuid4().hex[:20]}"
        if call_id in state.calls:
            out.notes.append(f"{event.agent} {event.tool} call {call_id} is recorded already: skipped")
            return
        turn_id = self._turn(engine, sid, state, out)
        paths = None if event.changed_paths is None else _inside(engine, event, out)
        meta: dict[str, object] = {"agent": event.agent}
        if event.failed:
            meta["failed"] = True
        meta.update(side_effect_meta(event.tool, event.summary, str(engine.workspace)))
        cp = engine.checkpoint(
            label=event.summary,
            changed_paths=paths,
            kind="tool",
            session_id=sid,
            turn_id=turn_id,
            tool=event.tool,
            tool_call_id=call_id,
            meta=meta,
        )
        state.calls.add(call_id)
        out.steps.append(Recorded(cp, turn_id))


def running_turn(engine: Engine, sid: str, size: int) -> str | None:
    """The session's running turn: its last ``turn`` unless a ``turnEnd`` of it came after. Read
    from the journal's tail (a window that doubles until it holds a turn line, or is the whole
    journal): a long session costs what its last turn appended, not what it ever did."""
    window = TAIL_BYTES
    while True:
        start = max(0, size - window)
        last: TurnEvent | TurnEndEvent | None = None
        for event in engine.events(
            sid, only=(TurnEvent, TurnEndEvent), start=_line_start(engine, sid, start)
        ):
            if isinstance(event, TurnEvent | TurnEndEvent):
                last = event
        if last is not None:
            return last.turn_id if isinstance(last, TurnEvent) else None
        if start == 0:
            return None
        window *= 4


def _line_start(engine: Engine, sid: str, offset: int) -> int:
    """The first line start at or after ``offset`` in the session's journal."""
    if offset == 0:
        return 0
    with StoreLayout(engine.store_dir).journal(sid).open("rb") as f:
        f.seek(offset - 1)
        f.readline()  # the rest of the line ``offset`` falls in (nothing when it starts one)
        return f.tell()


def _check_cwd(engine: Engine, event: HookEvent) -> None:
    """An event from a folder outside this workspace does not belong to this store."""
    if event.cwd is None:
        return
    if not Path(event.cwd).is_absolute():
        raise HookRefused(f"{event.agent} {event.hook_name}: cwd {event.cwd!r} is not an absolute path")
    if not _within(os.path.realpath(event.cwd), str(engine.workspace)):
        raise HookRefused(
            f"{event.agent} {event.hook_name}: cwd {event.cwd} is not inside the workspace {engine.workspace}"
        )


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _inside(engine: Engine, event: HookEvent, out: HookOutcome) -> list[str]:
    """The event's paths inside the workspace (relative ones are relative to its ``cwd``), as
    workspace-relative paths; the others are dropped with a note."""
    base = event.cwd or str(engine.workspace)
    kept: list[str] = []
    for path in event.changed_paths or ():
        full = path if Path(path).is_absolute() else str(Path(base) / path)
        try:
            kept.append(engine.rel(full))
        except PathOutsideWorkspace:
            out.notes.append(f"{event.agent} {event.tool}: {path} is outside the workspace: not recorded")
    return kept
