"""What the journals say happened, folded into counts and samples (pure, table-tested).

The metrics are derived from what is already durable so that every reader — the server, or a
``retrace metrics`` process that saw nothing live — gets the same numbers from the same store:

* checkpoints by session and kind (``checkpoint`` lines) and failed ones (``checkpointFailed``);
  attempts = both; capture latency from each checkpoint's ``captureMs`` (baselines left out);
  checkpoints per turn (agent checkpoints of each ``turnId``);
* restores (``restore`` lines: outcome, duration, mode, conflicts by resolution) and
  conversation-only restores (``conversationHead`` with reason ``restore`` that no applied
  ``both`` restore of the same target accounts for);
* restore reasons (``restoreReason``) joined to their restore by checkpoint id;
* subagents' peak memory (``task`` lines: the server's peak RSS at each child's end) and each
  child's latest ``task`` line (the status bar's subagent figures);
* tool calls (``toolCallIntent``/``toolCallResult`` ids, per session): :func:`slim` drops their
  inputs and outputs before a reader keeps them.

One rule for damage, held by every view built on this fold (the metrics, the Health panel, the
status bar's ``retrace/stats``): a line that is damaged or unsealed after a sealed one is left out
(:class:`~retrace.engine.store.cursor.JournalCursor`); the verifier reports it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from retrace.engine.store.events import (
    CheckpointEvent,
    CheckpointFailedEvent,
    ConversationHeadEvent,
    JournalEvent,
    RestoreReasonEvent,
    RestoreStatsEvent,
    TaskEvent,
    ToolCallIntentEvent,
    ToolCallResultEvent,
)

METRICS_TYPES = (
    CheckpointEvent,
    CheckpointFailedEvent,
    RestoreStatsEvent,
    RestoreReasonEvent,
    ConversationHeadEvent,
    TaskEvent,
)
"""The event models the metrics read (a one-shot ``retrace metrics`` reads only these: tool-call
lines, most of a journal, are then not even decoded)."""
READ_TYPES = (*METRICS_TYPES, ToolCallIntentEvent, ToolCallResultEvent)
"""The event models the fold reads (every other line is skipped before validation)."""

NO_REASON = "none"
TIMED = ("applied", "failed")


@dataclass(frozen=True)
class Restore:
    """One restore as the metrics count it."""

    session: str
    mode: str
    outcome: str
    """``applied``, ``failed`` or ``conflict`` (refused)."""
    key: str
    """The id a reason names: the restore checkpoint, else the target."""
    duration_s: float | None
    conflicts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class SlowCheckpoint:
    checkpoint_id: str
    session: str
    kind: str
    capture_s: float


@dataclass
class Facts:
    checkpoints: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(session, kind) → checkpoints recorded."""
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(session, kind) → checkpoints that could not be recorded."""
    capture_s: list[float] = field(default_factory=list)
    per_turn: Counter[str] = field(default_factory=Counter)
    """turn id → agent checkpoints (``tool`` and ``background``) in it."""
    restores: list[Restore] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    """restore key → the reason the user gave (the last one given wins)."""
    subagent_peak_rss_bytes: float | None = None
    tasks: dict[str, TaskEvent] = field(default_factory=dict)
    """task id → its latest ``task`` event."""
    tool_calls: set[tuple[str, str]] = field(default_factory=set)
    """(session, tool call id) of every journaled tool call."""
    slowest: list[SlowCheckpoint] = field(default_factory=list)

    def reason_of(self, restore: Restore) -> str:
        return self.reasons.get(restore.key, NO_REASON)

    def restore_latencies(self) -> list[float]:
        """Durations of the restores that changed or tried to change the workspace (applied or
        failed; a refusal over conflicts is not a restore's latency), as ``retrace stats``."""
        return [r.duration_s for r in self.restores if r.duration_s is not None and r.outcome in TIMED]


SLOWEST = 10


def fold(journals: Iterable[tuple[str, Iterable[JournalEvent]]]) -> Facts:
    """The facts of every ``(session id, typed events)`` journal."""
    facts = Facts()
    both_applied: Counter[str] = Counter()
    conversation_heads: list[tuple[str, str]] = []
    slow: list[SlowCheckpoint] = []
    for session, events in journals:
        for ev in events:
            if isinstance(ev, CheckpointEvent):
                _checkpoint(facts, session, ev, slow)
            elif isinstance(ev, CheckpointFailedEvent):
                facts.failures[(session, ev.kind)] += 1
            elif isinstance(ev, RestoreStatsEvent):
                restore = _restore(session, ev)
                facts.restores.append(restore)
                if restore.mode == "both" and restore.outcome == "applied" and ev.target_id:
                    both_applied[ev.target_id] += 1
            elif isinstance(ev, ConversationHeadEvent) and ev.reason == "restore" and ev.checkpoint_id:
                conversation_heads.append((session, ev.checkpoint_id))
            elif isinstance(ev, RestoreReasonEvent):
                facts.reasons[ev.checkpoint_id] = ev.reason
            else:
                _other(facts, session, ev)
    for session, target in conversation_heads:
        if both_applied[target] > 0:  # the conversation half of a "both" restore
            both_applied[target] -= 1
            continue
        facts.restores.append(Restore(session, "conversation", "applied", target, None))
    facts.slowest = sorted(slow, key=lambda s: -s.capture_s)[:SLOWEST]
    return facts


def _checkpoint(facts: Facts, session: str, ev: CheckpointEvent, slow: list[SlowCheckpoint]) -> None:
    cp = ev.checkpoint
    facts.checkpoints[(session, cp.kind)] += 1
    if cp.kind in ("tool", "background") and cp.turn_id:
        facts.per_turn[cp.turn_id] += 1
    if cp.kind != "baseline":
        seconds = cp.capture_ms / 1000
        facts.capture_s.append(seconds)
        slow.append(SlowCheckpoint(cp.id, session, cp.kind, seconds))
        if len(slow) > 4 * SLOWEST:
            slow.sort(key=lambda s: -s.capture_s)
            del slow[SLOWEST:]


def _restore(session: str, ev: RestoreStatsEvent) -> Restore:
    return Restore(
        session=session,
        mode=ev.mode or "code",
        outcome=ev.kind,
        key=ev.checkpoint_id or ev.target_id or "",
        duration_s=ev.duration_ms / 1000,
        conflicts=tuple(sorted(ev.conflicts.items())),
    )


def _other(facts: Facts, session: str, ev: JournalEvent) -> None:
    if isinstance(ev, ToolCallIntentEvent | ToolCallResultEvent):
        facts.tool_calls.add((session, ev.id))
    elif isinstance(ev, TaskEvent):
        _task(facts, ev)


def slim(ev: JournalEvent) -> JournalEvent:
    """``ev`` as a long-lived reader keeps it: a tool call without its input and output (the
    fold needs only its id)."""
    if isinstance(ev, ToolCallIntentEvent):
        return ev.model_copy(update={"input": {}})
    if isinstance(ev, ToolCallResultEvent):
        return ev.model_copy(update={"output": None, "changed_paths": []})
    return ev


def _task(facts: Facts, ev: TaskEvent) -> None:
    facts.tasks[ev.task_id] = ev
    peak = ev.metrics.get("serverPeakRssMiB")
    if isinstance(peak, int | float) and peak > 0:
        value = float(peak) * 1024 * 1024
        facts.subagent_peak_rss_bytes = max(facts.subagent_peak_rss_bytes or 0.0, value)
