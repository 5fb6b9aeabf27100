"""Restores and other agents' sessions (Claude Code, Gemini CLI), at the service level and through
the real command line: ``conversation`` / ``both`` on such a checkpoint is refused with the reason
(whatever else the request says), a code restore while such an agent's turn runs is refused
naming agent, session and since when unless the caller says ``proceed``, a dry run lists the
running turns, an ended or idle turn asks nothing, and nothing changes on a refusal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.cli.cli_support import Cli

from retrace.app.restore import (
    AgentTurnRunning,
    ConversationNotRestorable,
    RestoreRequest,
    refuse_conversation,
    restore_code_on_disk,
    settle_agents,
)
from retrace.app.timeline.agents import IDLE_LIMIT
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import AgentSessionEvent, TurnEndEvent, TurnEvent

SID = "claude-code-0c4f"


def seed(engine: Engine, ws: Path, *, ended: bool, ts: float | None = None) -> tuple[Checkpoint, Checkpoint]:
    """A Claude Code session: a prompt, a Write of notes.txt, a Bash deleting old.txt (the hook
    contract's journal), the turn ended or not. Returns (the Write's, the Bash's) checkpoints."""
    stamp = {} if ts is None else {"ts": ts}
    engine.append_event(
        AgentSessionEvent(agent="claude-code", external_session_id="0c4f", cwd=str(ws), **stamp),
        session_id=SID,
    )
    engine.append_event(TurnEvent(turn_id="ct1", text="tidy the notes", **stamp), session_id=SID)
    (ws / "notes.txt").write_text("notes v1\n")
    write = engine.checkpoint(
        label="notes.txt",
        changed_paths=["notes.txt"],
        kind="tool",
        tool="Write",
        tool_call_id="toolu_1",
        turn_id="ct1",
        session_id=SID,
        meta={"agent": "claude-code"},
    )
    (ws / "old.txt").unlink()
    bash = engine.checkpoint(
        label="rm old.txt",
        kind="tool",
        tool="Bash",
        tool_call_id="toolu_2",
        turn_id="ct1",
        session_id=SID,
        meta={"agent": "claude-code"},
    )
    if ended:
        engine.append_event(TurnEndEvent(turn_id="ct1", **stamp), session_id=SID)
    return write, bash


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "old.txt").write_text("old\n")
    return root


@pytest.fixture
def engine(ws: Path, tmp_path: Path) -> Iterator[Engine]:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as e:
        yield e


@pytest.mark.parametrize("mode", ["conversation", "both"])
def test_conversation_parts_of_an_agent_checkpoint_are_refused_with_the_reason(
    engine: Engine, ws: Path, mode: str
) -> None:
    write, bash = seed(engine, ws, ended=True)
    # A unique prefix of the write's id (ids made in the same instant share long prefixes).
    others = [cp.id for cp in engine.timeline() if cp.id != write.id]
    prefix = next(
        write.id[:n]
        for n in range(4, len(write.id) + 1)
        if not any(o.startswith(write.id[:n]) for o in others)
    )
    for target in (write.id, bash.id, prefix):
        with pytest.raises(ConversationNotRestorable, match="Claude Code keeps its own conversation"):
            refuse_conversation(engine, engine.get(target).id, mode)  # type: ignore[arg-type]
    refuse_conversation(engine, write.id, "code")  # code is offered


def test_a_checkpoint_in_an_agent_session_without_the_meta_stamp_is_refused_too(
    engine: Engine, ws: Path
) -> None:
    seed(engine, ws, ended=True)
    (ws / "x.txt").write_text("x\n")
    foreign = engine.record_foreign("external", {"session_id": SID, "turn_id": "ct1"})
    assert foreign is not None and "agent" not in foreign.meta
    with pytest.raises(ConversationNotRestorable):
        refuse_conversation(engine, foreign.id, "both")


def test_retrace_own_checkpoints_keep_every_mode(engine: Engine, ws: Path) -> None:
    (ws / "own.txt").write_text("own\n")
    own = engine.checkpoint(label="write_file: own.txt", kind="tool", tool="write_file", session_id="ses_own")
    for mode in ("code", "conversation", "both"):
        refuse_conversation(engine, own.id, mode)  # type: ignore[arg-type]


def test_a_code_restore_while_an_agent_turn_runs_asks_first(engine: Engine, ws: Path) -> None:
    write, _ = seed(engine, ws, ended=False)
    with pytest.raises(AgentTurnRunning) as refused:
        settle_agents(engine, "code", dry_run=False, choice=None)
    message = str(refused.value)
    assert refused.value.code == "agentTurnRunning"
    for needle in ("Claude Code", "claude-code", SID, "since", "tidy the notes", "proceed"):
        assert needle in message, message
    listed = settle_agents(engine, "code", dry_run=True, choice=None)
    assert [(t.session_id, t.turn_id) for t in listed] == [(SID, "ct1")]
    assert settle_agents(engine, "conversation", dry_run=False, choice=None) == listed  # touches no file
    proceed = settle_agents(engine, "both", dry_run=False, choice="proceed")
    assert proceed == listed
    outcome = restore_code_on_disk(engine, RestoreRequest(checkpoint=write.id))
    assert outcome.kind == "applied"
    assert (ws / "old.txt").read_text() == "old\n"


def test_an_ended_or_idle_turn_asks_nothing(engine: Engine, ws: Path, tmp_path: Path) -> None:
    seed(engine, ws, ended=True)
    assert settle_agents(engine, "code", dry_run=False, choice=None) == []


def test_an_agent_that_died_mid_turn_long_ago_asks_nothing(ws: Path, tmp_path: Path) -> None:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as engine:
        old = (datetime.now(UTC) - IDLE_LIMIT - timedelta(minutes=5)).timestamp()
        seed(engine, ws, ended=False, ts=old)
        # its checkpoints are recent (written now): alive
        assert len(settle_agents(engine, "code", dry_run=True, choice=None)) == 1
    # the same journal without fresh checkpoints: only old events
    store2 = tmp_path / "store2"
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    with Engine.open(ws2, store2, config=EngineConfig(watcher=False)) as engine:
        engine.append_event(
            AgentSessionEvent(agent="gemini-cli", external_session_id="g", ts=old), session_id="gemini-cli-g"
        )
        engine.append_event(TurnEvent(turn_id="gt1", text="stalled", ts=old), session_id="gemini-cli-g")
        assert settle_agents(engine, "code", dry_run=False, choice=None) == []


# --------------------------------------------------------------------------- the real command line


@pytest.mark.slow
def test_the_command_line_gets_the_same_refusals(ws: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as engine:
        write, _ = seed(engine, ws, ended=False)
    cli = Cli(ws, store)
    for mode in ("conversation", "both"):
        proc = cli("restore", write.id, "--mode", mode, code=1)
        assert "Claude Code keeps its own conversation; Retrace restores only the code" in proc.stderr
        assert proc.stderr.count("\n") == 1
    proc = cli("restore", write.id, code=1)
    assert "Claude Code (claude-code)" in proc.stderr and SID in proc.stderr, proc.stderr
    assert "--while-agent-runs proceed" in proc.stderr
    assert not (ws / "old.txt").exists(), "a refusal changes nothing"
    dry = json.loads(cli("restore", write.id, "--dry-run", "--json").stdout)
    assert [t["sessionId"] for t in dry["agentTurns"]] == [SID]
    assert "Claude Code" in cli("restore", write.id, "--dry-run").stdout
    cli("restore", write.id, "--while-agent-runs", "proceed")
    assert (ws / "old.txt").read_text() == "old\n"
