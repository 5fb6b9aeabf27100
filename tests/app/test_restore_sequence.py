"""THE restore sequence (``app/restore_sequence.py``): code → conversation → record → reason, the
one order every front end (the command line, the server) follows.

Table: each mode × each outcome kind the code half can end with (applied, conflict, nothing to
restore, failed, a dry run's preview), driven with a fake code applier (it records that it was
called and answers that kind) over a real engine on a temporary workspace and a real (headless)
agent service. What must hold, read back from the journal (one session: its lines are in order):

- the conversation moves only when the code half applied or had nothing to do, never on a dry
  run, never for ``code``;
- a code-only restore that applied tells the model of the target's session (its next prompt);
- the restore is recorded for its undo only when something changed;
- a reason is recorded only when something was restored (and one was given);
- in that order: code, conversation (or the note), record, reason.

Then: the command line's "no conversation" rule, an undo plugged in as a conversation strategy,
a refusal before anything is applied, and the later reason (the server's flow) through the same
call.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from tests.workspaces import project

from retrace.agent.headless import PrintingHost
from retrace.agent.session import AgentService, MessageAt
from retrace.app.restore import ConversationNotRestorable, RestoreRequest, restore_code_on_disk
from retrace.app.restore_conversation import ConversationTarget
from retrace.app.restore_sequence import (
    RestoreDone,
    SequenceRequest,
    ToCheckpoint,
    UndoRestore,
    record_restore_reason,
    run_restore,
)
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.gate import EngineGate
from retrace.engine.models import (
    Checkpoint,
    NothingToRestore,
    RestoreConflict,
    RestoreFailed,
    RestoreMode,
    RestoreOutcome,
    RestorePreview,
)
from retrace.engine.store.events import (
    AgentSessionEvent,
    ConversationHeadEvent,
    MessageEvent,
    RestoreReasonEvent,
    RestoreRecordEvent,
)

SID = "s1"
Kind = str


@dataclass
class FakeApplier:
    """Answers ``kind``; "applied" really restores the files (a real restore checkpoint)."""

    kind: Kind
    gate: EngineGate
    calls: list[tuple[str, RestoreMode, bool]] = field(default_factory=list)

    async def apply(self, target: Checkpoint, request: RestoreRequest) -> RestoreOutcome:
        self.calls.append((target.id, request.mode, request.dry_run))
        common = {"target_id": target.id, "mode": request.mode}
        if self.kind == "applied":
            on_disk = replace(request, checkpoint=target.id, mode="code", force=True)
            outcome = await self.gate.run(lambda e: restore_code_on_disk(e, on_disk))
            assert outcome.kind == "applied", outcome
            return outcome.model_copy(update={"mode": request.mode})
        if self.kind == "preview":
            return RestorePreview(**common)
        if self.kind == "conflict":
            return RestoreConflict(**common)
        if self.kind == "nothingToRestore":
            return NothingToRestore(**common, reason="already there")
        return RestoreFailed(**common, error="the disk is full")


@dataclass
class World:
    ws: Path
    engine: Engine
    agent: AgentService
    first: Checkpoint
    second: Checkpoint


def message(mid: str, parent: str | None, role: str, text: str) -> MessageEvent:
    kind = "prompt" if role == "user" else "message"
    return MessageEvent(id=mid, parent=parent, role=role, content=[{"type": "text", "text": text}], kind=kind)  # type: ignore[arg-type]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """One session, two prompts, a file changed by each turn: ``first`` is the end of the first
    turn, ``second`` (the head) the end of the second."""
    ws = project(tmp_path, "séquence ws", {"app.py": "v0\n"})
    with Engine.open(ws, tmp_path / "store", session_id=SID, config=EngineConfig(watcher=False)) as engine:
        engine.append_event(message("m1", None, "user", "write v1"))
        engine.append_event(message("m2", "m1", "assistant", "done v1"))
        (ws / "app.py").write_text("v1\n")
        first = engine.checkpoint("v1", ["app.py"], kind="tool", tool="write", conversation="m2")
        engine.append_event(message("m3", "m2", "user", "now write v2"))
        engine.append_event(message("m4", "m3", "assistant", "done v2"))
        (ws / "app.py").write_text("v2\n")
        second = engine.checkpoint("v2", ["app.py"], kind="tool", tool="write", conversation="m4")
        agent = AgentService(engine, PrintingHost(io.StringIO(), "deny"))
        yield World(ws, engine, agent, first, second)


def steps(engine: Engine) -> list[str]:
    """What the sequence journaled after the code half, in order (one session: one journal)."""
    out: list[str] = []
    for event in engine.events(SID, only=(ConversationHeadEvent, RestoreRecordEvent, RestoreReasonEvent)):
        if isinstance(event, ConversationHeadEvent):
            out.append("note" if event.reason == "codeRestore" else "conversation")
        elif isinstance(event, RestoreRecordEvent):
            out.append("record")
        elif isinstance(event, RestoreReasonEvent):
            out.append("reason")
    return out


MODES: tuple[RestoreMode, ...] = ("code", "conversation", "both")
KINDS: tuple[Kind, ...] = ("applied", "conflict", "nothingToRestore", "failed", "preview")


def expected(mode: RestoreMode, kind: Kind) -> list[str]:
    moved = mode != "code" and kind in ("applied", "nothingToRestore")
    told = mode == "code" and kind == "applied"
    changed = moved or kind == "applied"
    return (
        (["conversation"] if moved else [])
        + (["note"] if told else [])
        + (["record"] if changed else [])
        + (["reason"] if changed else [])
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_and_outcome_runs_the_steps_it_needs_in_order(
    world: World, mode: RestoreMode, kind: Kind
) -> None:
    applier = FakeApplier(kind, world.agent.gate)
    request = SequenceRequest(
        RestoreRequest(checkpoint=world.first.id, mode=mode, dry_run=kind == "preview"),
        reason="wrongApproach",
    )
    done = asyncio.run(run_restore(world.agent, applier, request))

    assert applier.calls == [(world.first.id, mode, kind == "preview")]  # the code half, once
    assert done.outcome.kind == kind and done.target.id == world.first.id
    assert steps(world.engine) == expected(mode, kind)
    moved = "conversation" in expected(mode, kind)
    if mode == "code":
        assert done.conversation is None
    else:
        assert done.conversation is not None and done.conversation.moved is moved
        assert done.conversation.session_id == SID
        skipped = None if moved else "dryRun" if kind == "preview" else "codeNotApplied"
        assert done.conversation.skipped == skipped
    if moved:
        assert done.conversation is not None and done.conversation.restored is not None
        assert done.conversation.restored.view.head == "m2"
        assert done.conversation.left_out == "now write v2"  # the prompt the move left out
    assert done.told is ("note" in expected(mode, kind))
    assert (done.record is not None) is ("record" in expected(mode, kind))
    assert (done.reason is not None) is ("reason" in expected(mode, kind))
    if done.record is not None:
        assert done.record.session_id == (SID if moved else None)
        assert done.record.code_before == (world.second.id if kind == "applied" else None)
    if done.reason is not None:
        # A reason names the restore's own checkpoint, or the target when it made none.
        own = done.outcome.checkpoint.id if kind == "applied" else world.first.id  # type: ignore[union-attr]
        assert (done.reason.checkpoint_id, done.reason.mode) == (own, mode)


def test_without_a_reason_nothing_is_recorded_as_one(world: World) -> None:
    request = SequenceRequest(RestoreRequest(checkpoint=world.first.id, mode="both"))
    done = asyncio.run(run_restore(world.agent, FakeApplier("applied", world.agent.gate), request))
    assert done.reason is None and steps(world.engine) == ["conversation", "record"]


def test_a_session_without_messages_is_said_not_moved_when_the_front_end_asks(world: World) -> None:
    """The command line's rule: a checkpoint of a session with no conversation is reported, not
    moved (``noConversation``); nothing is recorded for it."""
    other = world.engine.checkpoint("elsewhere", session_id="s2")
    request = SequenceRequest(RestoreRequest(checkpoint=other.id, mode="conversation"), reason="other")
    applier = FakeApplier("nothingToRestore", world.agent.gate)
    done = asyncio.run(run_restore(world.agent, applier, request, ToCheckpoint(needs_messages=True)))
    assert done.conversation is not None and done.conversation.skipped == "noConversation"
    assert done.conversation.session_id == "s2" and done.record is None and done.reason is None
    assert list(world.engine.events("s2", only=(ConversationHeadEvent, RestoreRecordEvent))) == []


def test_another_agents_checkpoint_is_refused_before_the_code_half(world: World) -> None:
    world.engine.append_event(
        AgentSessionEvent(agent="claude-code", external_session_id="x", cwd=str(world.ws)),
        session_id="claude-code-x",
    )
    theirs = world.engine.checkpoint("theirs", session_id="claude-code-x", meta={"agent": "claude-code"})
    applier = FakeApplier("applied", world.agent.gate)
    for mode in ("conversation", "both"):
        request = SequenceRequest(RestoreRequest(checkpoint=theirs.id, mode=mode))  # type: ignore[arg-type]
        with pytest.raises(ConversationNotRestorable):
            asyncio.run(run_restore(world.agent, applier, request))
    assert applier.calls == [] and steps(world.engine) == []


def test_a_guard_refusal_stops_everything_but_not_a_dry_run(world: World) -> None:
    class BusyError(Exception):
        pass

    async def guard() -> None:
        raise BusyError

    applier = FakeApplier("applied", world.agent.gate)
    request = SequenceRequest(RestoreRequest(checkpoint=world.first.id, mode="both"))
    with pytest.raises(BusyError):
        asyncio.run(run_restore(world.agent, applier, request, guard=guard))
    assert applier.calls == []
    dry = SequenceRequest(RestoreRequest(checkpoint=world.first.id, mode="both", dry_run=True))
    done = asyncio.run(run_restore(world.agent, FakeApplier("preview", world.agent.gate), dry, guard=guard))
    assert done.outcome.kind == "preview"


def test_an_undo_is_the_same_sequence_with_the_undo_strategy(world: World) -> None:
    """The undo path plugs in as a conversation strategy: the code back to where it was, the
    conversation back to the head it had, recorded as an undo (so undoing it again is a redo)."""
    first = asyncio.run(
        run_restore(
            world.agent,
            FakeApplier("applied", world.agent.gate),
            SequenceRequest(RestoreRequest(world.first.id, "both")),
        )
    )
    assert first.record is not None and first.record.conversation_before == "m4"
    record = first.record
    assert record.code_before is not None
    undo = SequenceRequest(RestoreRequest(checkpoint=record.code_before, mode="code"), reason="other")
    done: RestoreDone = asyncio.run(
        run_restore(world.agent, FakeApplier("applied", world.agent.gate), undo, UndoRestore(record))
    )
    assert done.conversation is not None and done.conversation.restored is not None
    assert done.conversation.restored.view.head == "m4" and done.conversation.session_id == SID
    assert done.record is not None and done.record.undo and done.record.label == record.label
    assert not done.told  # an undo that moved the conversation tells the model nothing more
    assert steps(world.engine) == ["conversation", "record", "conversation", "record", "reason"]


def test_a_reason_given_later_is_recorded_by_the_same_call(world: World) -> None:
    """The server asks for the reason after the restore; it goes through the sequence's call."""
    done = asyncio.run(
        run_restore(
            world.agent,
            FakeApplier("applied", world.agent.gate),
            SequenceRequest(RestoreRequest(world.first.id, "code")),
        )
    )
    assert done.reason is None and done.outcome.checkpoint is not None  # type: ignore[union-attr]
    cp_id = done.outcome.checkpoint.id  # type: ignore[union-attr]
    event = asyncio.run(record_restore_reason(world.agent.gate, cp_id, "brokeTests", "code"))
    assert (event.checkpoint_id, event.reason) == (cp_id, "brokeTests")
    assert steps(world.engine) == ["note", "record", "reason"]


def test_an_explicit_session_and_head_is_moved_and_recorded_as_that_session(world: World) -> None:
    """A prompt's restore point: the target checkpoint may belong to another session (the head
    when the prompt was sent); the conversation that moves — and the one the record names for the
    undo — is the explicit one, no other-agent refusal applies."""
    other = world.engine.checkpoint("someone else's", session_id="s2")
    whose = ToCheckpoint(ConversationTarget(SID, MessageAt("m2")))
    request = SequenceRequest(RestoreRequest(checkpoint=other.id, mode="conversation"))
    done = asyncio.run(
        run_restore(world.agent, FakeApplier("nothingToRestore", world.agent.gate), request, whose)
    )
    assert done.conversation is not None and done.conversation.restored is not None
    assert done.conversation.session_id == SID and done.conversation.restored.view.head == "m2"
    assert done.conversation.left_out == "now write v2"
    assert done.record is not None and done.record.session_id == SID
    assert done.record.conversation_before == "m4"
