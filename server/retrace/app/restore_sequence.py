"""THE restore sequence, one for every front end: code → conversation → record → reason.

The command line (``retrace restore``: the disk applier, a headless agent service) and the
server (``retrace/checkpoint/restore`` and everything built on it — a prompt's restore point,
*Undo restore*, the relay's restore: the editor applier when the client applies workspace
edits, the live agent) call :func:`run_restore`; they keep only what is theirs (parsing and
printing; editor state, notifications and the wire result). The steps, in this order:

1. the target resolved; a conversation part on another agent's checkpoint refused (the
   conversation strategy decides: an explicit session or an undo is Retrace's own);
2. the front end's ``guard`` (the server: none of its own agent's turns runs; not for a dry run);
3. other agents' running turns (:func:`~retrace.app.restore.settle_agents`), git moved since the
   target (:func:`~retrace.app.restore_git.check_git`; an undo checks against the undone
   restore's checkpoint), background commands (:func:`~retrace.app.restore.settle_background`),
   the park on a branch when asked, the side effects a restore does not undo;
4. the code half through a :class:`CodeApplier` (:class:`DiskApplier`, or the server's editor
   applier) — always called, a conversation-only restore included (it reports "nothing to
   restore");
5. the conversation half through a :class:`ConversationStrategy` (:class:`ToCheckpoint`: to the
   checkpoint's cursor or an explicit head; :class:`UndoRestore`: back to the head an undone
   restore recorded): only for ``conversation``/``both``, never on a dry run, only when the code
   half applied or had nothing to do (:func:`~retrace.app.restore.moves_conversation`);
6. a code-only restore that applied (and moved no conversation) tells the model of the target's
   session at its next prompt (:func:`~retrace.app.restore_side.tell_code_restore`);
7. the restore recorded for its undo (``restoreRecord``; only when something changed);
8. the reason, when given and something was restored (:func:`record_restore_reason`, which is
   also the call for a reason given later: the server's ``retrace/restore/reason``).

A refusal in steps 1–3 raises before anything changes. The answer is one typed
:class:`RestoreDone`. ``tests/architecture`` keeps the front ends from calling the steps of 5–8
themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol

from retrace.app.restore import (
    BackgroundChoice,
    RestoreRequest,
    WhileAgentRuns,
    moves_conversation,
    reason_key,
    record_reason,
    refuse_conversation,
    restore_code_on_disk,
    settle_agents,
    settle_background,
)
from retrace.app.restore_conversation import ConversationTarget, move_conversation
from retrace.app.restore_git import check_git, park_if_asked, side_effects_after
from retrace.app.restore_side import tell_code_restore, with_stopped
from retrace.app.restore_undo import ConversationMove, git_reference, remember
from retrace.engine.models import TerminalState
from retrace.engine.store.events import MessageEvent

if TYPE_CHECKING:
    from retrace.agent.notifications import BackgroundTaskView
    from retrace.agent.session import AgentService, SessionRestored
    from retrace.engine import Engine
    from retrace.engine.gate import EngineGate
    from retrace.engine.models import Checkpoint, RestoreMode, RestoreOutcome
    from retrace.engine.store.events import RestoreReason, RestoreReasonEvent, RestoreRecordEvent
    from retrace.protocol.git_restore import GitChoice, GitRestoreInfo, SideEffectView
    from retrace.protocol.timeline import RunningAgentTurn


@dataclass(frozen=True)
class SequenceRequest:
    """A restore as a front end asks for it: the code half's request and the caller's words."""

    restore: RestoreRequest
    background: BackgroundChoice | None = None
    while_agent_runs: WhileAgentRuns | None = None
    git_choice: GitChoice | None = None
    reason: RestoreReason | None = None
    """Recorded when the restore restored something (``None``: none given now)."""


class CodeApplier(Protocol):
    """The code half: apply this request's restore of ``target`` and say how it ended."""

    async def apply(self, target: Checkpoint, request: RestoreRequest) -> RestoreOutcome: ...


class DiskApplier:
    """The code half through the engine's disk transaction (the engine journals the restore's
    intent itself, so a crash mid-apply is rolled back when the store is next opened)."""

    def __init__(self, gate: EngineGate) -> None:
        self.gate = gate

    async def apply(self, target: Checkpoint, request: RestoreRequest) -> RestoreOutcome:
        on_disk = replace(request, checkpoint=target.id)
        return await self.gate.run(lambda e: restore_code_on_disk(e, on_disk))


ConversationSkip = Literal["dryRun", "codeNotApplied", "noConversation"]


@dataclass(frozen=True)
class ConversationPart:
    """The conversation half: which session, and how it moved (``restored``) or why not."""

    session_id: str
    restored: SessionRestored | None = None
    left_out: str | None = None
    """The first prompt the move left out, in the user's words (the chat offers it again)."""
    skipped: ConversationSkip | None = None

    @property
    def moved(self) -> bool:
        return self.restored is not None


def _skip(request: RestoreRequest, outcome: RestoreOutcome) -> ConversationSkip | None:
    if request.dry_run:
        return "dryRun"
    return None if moves_conversation(request.mode, outcome) else "codeNotApplied"


class ConversationStrategy(Protocol):
    """Where the conversation half goes (and whether another agent's checkpoint is refused)."""

    @property
    def undoing(self) -> RestoreRecordEvent | None:
        """The recorded restore this one undoes (``None``: an ordinary restore)."""
        ...

    def refuse(self, engine: Engine, target: Checkpoint, mode: RestoreMode) -> None: ...

    async def move(
        self, agent: AgentService, target: Checkpoint, request: RestoreRequest, outcome: RestoreOutcome
    ) -> ConversationPart | None: ...


def _has_messages(engine: Engine, session_id: str) -> bool:
    return any(isinstance(ev, MessageEvent) for ev in engine.events(session_id, only=(MessageEvent,)))


@dataclass(frozen=True)
class ToCheckpoint:
    """The conversation to the target's cursor (``whose``: another session or an explicit head,
    e.g. a prompt's restore point; then no other-agent refusal: it names Retrace's own session).
    ``needs_messages``: a session with no message is said not moved (``noConversation``) instead
    of getting an empty conversation (the command line's rule)."""

    whose: ConversationTarget | None = None
    needs_messages: bool = False

    @property
    def undoing(self) -> RestoreRecordEvent | None:
        return None

    def refuse(self, engine: Engine, target: Checkpoint, mode: RestoreMode) -> None:
        if self.whose is None:
            refuse_conversation(engine, target.id, mode)

    async def move(
        self, agent: AgentService, target: Checkpoint, request: RestoreRequest, outcome: RestoreOutcome
    ) -> ConversationPart | None:
        if request.mode == "code":
            return None
        whose = self.whose or ConversationTarget(target.session_id)
        skip = _skip(request, outcome)
        if (
            skip is None
            and self.needs_messages
            and not await agent.gate.run(lambda e: _has_messages(e, whose.session_id))
        ):
            skip = "noConversation"
        if skip is not None:
            return ConversationPart(whose.session_id, skipped=skip)
        moved = await move_conversation(agent, whose, target.id)
        return ConversationPart(whose.session_id, moved.restored, moved.restored_prompt)


@dataclass(frozen=True)
class UndoRestore:
    """The undo of ``record``: its conversation (if it moved one) back to the head and terminal
    it recorded, whatever the mode asked of the code half; a redo forks from its target again."""

    record: RestoreRecordEvent

    @property
    def undoing(self) -> RestoreRecordEvent | None:
        return self.record

    def refuse(self, engine: Engine, target: Checkpoint, mode: RestoreMode) -> None:
        refuse_conversation(engine, target.id, mode)

    async def move(
        self, agent: AgentService, target: Checkpoint, request: RestoreRequest, outcome: RestoreOutcome
    ) -> ConversationPart | None:
        rec = self.record
        if rec.session_id is None:
            return None
        if not moves_conversation("conversation", outcome):
            return ConversationPart(rec.session_id, skipped="dryRun" if outcome.dry_run else "codeNotApplied")
        fork = rec.target_id if rec.undo else None
        terminal = rec.terminal_before or TerminalState()
        restored = await agent.move_head(rec.session_id, rec.conversation_before, terminal, fork)
        return ConversationPart(rec.session_id, restored)


@dataclass(frozen=True)
class RestoreDone:
    """Everything a restore did, for the front end to print or send."""

    target: Checkpoint
    outcome: RestoreOutcome
    conversation: ConversationPart | None
    """``None``: no conversation half (``code``, or an undo of a code-only restore)."""
    told: bool
    """The model of the target's session will be told of the reverted files."""
    record: RestoreRecordEvent | None
    """The ``restoreRecord`` journaled for the undo (``None``: nothing changed)."""
    reason: RestoreReasonEvent | None
    git: GitRestoreInfo | None
    agent_turns: list[RunningAgentTurn] = field(default_factory=list)
    background: list[BackgroundTaskView] = field(default_factory=list)
    side_effects: list[SideEffectView] = field(default_factory=list)


async def record_restore_reason(
    gate: EngineGate, checkpoint_id: str, reason: RestoreReason, mode: RestoreMode | None
) -> RestoreReasonEvent:
    """THE call that journals a restore's reason: the sequence's last step, and the server's
    reason given after the restore (``retrace/restore/reason``)."""
    return await gate.run(lambda e: record_reason(e, checkpoint_id, reason, mode))


@dataclass(frozen=True)
class _Settled:
    agents: list[RunningAgentTurn]
    git: GitRestoreInfo | None
    background: list[BackgroundTaskView]
    effects: list[SideEffectView]


async def _settle(
    agent: AgentService,
    target: Checkpoint,
    request: SequenceRequest,
    undoing: RestoreRecordEvent | None,
) -> _Settled:
    """Step 3: what runs beside the restore, and git; a refusal raises before anything changes."""
    gate, r = agent.gate, request.restore
    agents = await gate.run(
        lambda e: settle_agents(e, r.mode, dry_run=r.dry_run, choice=request.while_agent_runs)
    )
    git = await gate.run(
        lambda e: check_git(
            e, git_reference(e, target.id, undoing), r.mode, dry_run=r.dry_run, choice=request.git_choice
        )
    )
    background = await settle_background(
        agent.background, r.mode, dry_run=r.dry_run, choice=request.background
    )
    git = await gate.run(
        lambda e: park_if_asked(e, git, r.mode, dry_run=r.dry_run, choice=request.git_choice)
    )
    effects = await gate.run(lambda e: side_effects_after(e, target.id))
    return _Settled(agents, git, background, effects)


def _moved(part: ConversationPart | None) -> ConversationMove | None:
    restored = part.restored if part is not None else None
    if part is None or restored is None or restored.before is None:
        return None
    return ConversationMove(part.session_id, restored.before[0], restored.before[1])


async def run_restore(
    agent: AgentService,
    applier: CodeApplier,
    request: SequenceRequest,
    conversation: ConversationStrategy | None = None,
    *,
    guard: Callable[[], Awaitable[None]] | None = None,
) -> RestoreDone:
    """Run one restore through every step (module docstring), engine calls through the agent's
    gate. ``conversation``: default :class:`ToCheckpoint` (the checkpoint's own session)."""
    strategy: ConversationStrategy = conversation or ToCheckpoint()
    gate, r = agent.gate, request.restore
    target = await gate.run(lambda e: e.get(r.checkpoint))
    await gate.run(lambda e: strategy.refuse(e, target, r.mode))
    if guard is not None and not r.dry_run:
        await guard()
    settled = await _settle(agent, target, request, strategy.undoing)
    outcome = await applier.apply(target, replace(r, checkpoint=target.id))
    part = await strategy.move(agent, target, r, outcome)
    background = settled.background
    if part is not None and part.restored is not None:  # stopped: started after the target
        background = with_stopped(background, part.restored.stopped)
    told = False
    if r.mode == "code" and not r.dry_run and (part is None or not part.moved):
        told = await tell_code_restore(agent, target, outcome)
    moved = _moved(part)
    record = await gate.run(
        lambda e: remember(e, target.id, r.mode, outcome, moved, undoing=strategy.undoing)
    )
    reason = None
    restored = outcome.kind == "applied" or (part is not None and part.moved)
    if request.reason is not None and not r.dry_run and restored:
        reason = await record_restore_reason(gate, reason_key(target.id, outcome), request.reason, r.mode)
    return RestoreDone(
        target=target,
        outcome=outcome,
        conversation=part,
        told=told,
        record=record,
        reason=reason,
        git=settled.git,
        agent_turns=settled.agents,
        background=background,
        side_effects=settled.effects,
    )
