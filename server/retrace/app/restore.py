"""What a restore *mode* means, in one place, for every front end.

``code`` restores files, ``conversation`` moves the session's conversation head AND its
terminal state (the agent shell's cwd and environment changes, as the checkpoint recorded them),
``both`` does the code first and moves the conversation and terminal only when the code part
applied (or had nothing to do); a ``code`` restore leaves the terminal as it is. A secret
variable's value is never recorded, so it cannot be restored by value: the session keeps its
current value when it has one, else it is left unset, and the result's terminal notes say which
(``AgentService.restore_session``). Files reach the disk through an applier — the engine's disk transaction
(:func:`restore_code_on_disk`, used by the CLI and by the server for clients that cannot apply
workspace edits) or the editor (the server's editor applier); the conversation through the
agent service the caller supplies. A dry run answers with a ``preview`` outcome.

Background commands may overwrite restored files: a code restore while some run needs the
caller's word on them (:func:`settle_background`: ``stop`` them first or ``keep`` them), else it
is refused with :class:`~retrace.agent.background.BackgroundTasksRunning`; a dry run reports them.

Another agent's sessions (Claude Code, Gemini CLI, recorded through their hooks) keep their
conversation in that agent: ``conversation`` and ``both`` on one of their checkpoints are refused
with the reason (:func:`refuse_conversation`, :class:`ConversationNotRestorable`), for every front
end. A code restore while such an agent's turn runs needs the caller's word
(:func:`settle_agents`: ``whileAgentRuns: "proceed"``), else it is refused with
:class:`AgentTurnRunning` naming the agent, the session and since when; a dry run lists them.

A restore's reason (optional, given after it: :func:`record_reason`) is a ``restoreReason``
journal event in the session of the checkpoint it names: the restore's own checkpoint, or the
target of a conversation-only restore (:func:`reason_key`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from retrace.app.timeline.agents import conversation_reason, is_external, running_turns
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import ConflictResolution, RestoreApplied, RestoreMode, RestoreOutcome
from retrace.engine.store.events import RestoreReason, RestoreReasonEvent

if TYPE_CHECKING:
    # Types only: ``retrace restore`` (no background commands, no protocol) must not import the
    # agent's tools or the protocol's models to start (~0.2 s of its start-up).
    from retrace.agent.background import BackgroundTasks
    from retrace.agent.notifications import BackgroundTaskView
    from retrace.protocol.models import RestoreParams
    from retrace.protocol.timeline import RunningAgentTurn


@dataclass(frozen=True)
class RestoreRequest:
    checkpoint: str
    mode: RestoreMode = "code"
    dry_run: bool = False
    force: bool = False
    resolutions: Mapping[str, ConflictResolution] = field(default_factory=dict)
    paths: list[str] | None = None
    skip_conflicts: bool = False


def touches_code(mode: RestoreMode) -> bool:
    return mode in ("code", "both")


def moves_conversation(mode: RestoreMode, outcome: RestoreOutcome) -> bool:
    """Whether the conversation part runs after the code part produced ``outcome``."""
    if mode not in ("conversation", "both") or outcome.dry_run:
        return False
    return outcome.kind in ("applied", "nothingToRestore")


def restore_code_on_disk(engine: Engine, request: RestoreRequest) -> RestoreOutcome:
    """The code part through the engine's disk transaction (conversation-only: nothing to do)."""
    return engine.restore(
        request.checkpoint,
        mode=request.mode,
        dry_run=request.dry_run,
        force=request.force,
        resolutions=dict(request.resolutions),
        paths=request.paths,
        skip_conflicts=request.skip_conflicts,
    )


BackgroundChoice = Literal["stop", "keep"]


async def settle_background(
    tasks: BackgroundTasks, mode: RestoreMode, *, dry_run: bool, choice: BackgroundChoice | None
) -> list[BackgroundTaskView]:
    """Before a restore: the background commands running now (as they were when asked), after
    doing what ``choice`` says with them. A code restore that would race them without a choice is
    refused; a dry run or a conversation-only restore leaves them alone."""
    running = tasks.running()
    views = [t.view() for t in running]
    if not running or dry_run or not touches_code(mode):
        return views
    if choice is None:
        from retrace.agent.background import BackgroundTasksRunning, short  # see the imports

        count = len(running)
        names = ", ".join(short(t.command, 60) for t in running)
        raise BackgroundTasksRunning(
            f"{count} background command{'s are' if count > 1 else ' is'} running ({names}): "
            f"{'they' if count > 1 else 'it'} may overwrite restored files. Stop "
            f"{'them' if count > 1 else 'it'} and restore, or restore anyway "
            '(backgroundTasks: "stop" | "keep")'
        )
    if choice == "stop":
        stopped = await tasks.stop_all(by="restore")
        views = [t.view() for t in stopped]
    return views


class ConversationNotRestorable(RetraceError):  # noqa: N818 (contract names)
    """``conversation`` or ``both`` asked for on a checkpoint of another agent's session."""

    code = "conversationNotRestorable"


class AgentTurnRunning(RetraceError):  # noqa: N818 (contract names)
    """A code restore while another agent's turn runs, without ``whileAgentRuns: "proceed"``."""

    code = "agentTurnRunning"


def checkpoint_agent(engine: Engine, checkpoint_id: str) -> str | None:
    """The agent whose session holds a checkpoint (``None``: Retrace's own, or none)."""
    cp = engine.get(checkpoint_id)
    stamped = cp.meta.get("agent")
    if isinstance(stamped, str) and stamped:
        return stamped
    return is_external(engine, cp.session_id)


def refuse_conversation(engine: Engine, checkpoint_id: str, mode: RestoreMode) -> None:
    """A conversation part on another agent's checkpoint is refused with the reason."""
    if mode == "code":
        return
    agent = checkpoint_agent(engine, checkpoint_id)
    if agent is not None:
        raise ConversationNotRestorable(
            f"{conversation_reason(agent)}: restore mode {mode!r} is not offered for this checkpoint "
            "(use mode 'code')"
        )


WhileAgentRuns = Literal["proceed"]


def _since(turn: RunningAgentTurn) -> str:
    return turn.since.strftime("%H:%M:%S UTC") if turn.since is not None else "an unknown time"


def agents_named(turns: list[RunningAgentTurn]) -> str:
    """Which agent runs a turn where, since when: "Claude Code (claude-code) in session … since …"."""
    return "; ".join(
        f"{t.agent_title} ({t.agent}) in session {t.session_id} since {_since(t)}"
        + (f" ({t.prompt[:60]!r})" if t.prompt else "")
        for t in turns
    )


def agents_message(turns: list[RunningAgentTurn]) -> str:
    """The refusal's words."""
    many = len(turns) > 1
    return (
        f"{'agents are' if many else 'an agent is'} running a turn: {agents_named(turns)}. Its tools "
        "may overwrite restored files. Wait for the turn to end, or restore anyway "
        '(whileAgentRuns: "proceed"; command line: --while-agent-runs proceed)'
    )


def settle_agents(
    engine: Engine, mode: RestoreMode, *, dry_run: bool, choice: WhileAgentRuns | None
) -> list[RunningAgentTurn]:
    """Before a restore: other agents' turns running now. A code restore that would race them
    without the caller's ``proceed`` is refused (:class:`AgentTurnRunning`); a dry run or a
    conversation-only restore only lists them. Run it where the engine may be used."""
    turns = running_turns(engine)
    if turns and not dry_run and touches_code(mode) and choice != "proceed":
        raise AgentTurnRunning(agents_message(turns))
    return turns


def reason_key(target_id: str, outcome: RestoreOutcome) -> str:
    """The checkpoint a reason for this restore names: its own ``restore`` checkpoint when it
    made one, else the target (a conversation-only restore makes none)."""
    if isinstance(outcome, RestoreApplied) and outcome.checkpoint is not None:
        return outcome.checkpoint.id
    return target_id


def record_reason(
    engine: Engine, checkpoint_id: str, reason: RestoreReason, mode: RestoreMode | None = None
) -> RestoreReasonEvent:
    """Journal ``reason`` for the restore named by ``checkpoint_id`` (in that checkpoint's
    session; an unknown checkpoint is refused)."""
    cp = engine.get(checkpoint_id)
    event = RestoreReasonEvent(checkpoint_id=cp.id, reason=reason, mode=mode)
    engine.append_event(event, session_id=cp.session_id)
    return event


def disk_request(params: RestoreParams, checkpoint: str) -> RestoreRequest:
    """The on-disk restore a request asks for (of the workspace, or inside a subagent's copy)."""
    return RestoreRequest(
        checkpoint=checkpoint,
        mode=params.mode,
        dry_run=params.dry_run,
        force=params.force,
        resolutions=dict(params.resolutions or {}),
        paths=params.paths,
        skip_conflicts=params.skip_conflicts,
    )
