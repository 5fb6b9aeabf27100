"""Another agent's session (Claude Code through its hooks) over the real server: the timeline tree
shows it as its own story labelled with its agent, its running turn titled by the prompt, its rows
by tool and input summary with no conversation restore offered; a conversation restore of one of
its checkpoints is refused with the reason, a code restore while its turn runs is refused with
``agentTurnRunning`` until the request says ``proceed`` (a dry run lists the turn), and then
brings the file back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import EditorClient, start_editor, stop_editor, validate

from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store.events import AgentSessionEvent, TurnEvent

pytestmark = pytest.mark.e2e

SID = "claude-code-7d1e"


def seed(workspace: Path, store: Path) -> tuple[str, str]:
    """Claude Code wrote notes.txt and deleted README.md in a turn that has not ended."""
    with Engine.open(workspace, store, config=EngineConfig(watcher=False)) as engine:
        engine.append_event(
            AgentSessionEvent(agent="claude-code", external_session_id="7d1e", cwd=str(workspace)),
            session_id=SID,
        )
        engine.append_event(TurnEvent(turn_id="ct1", text="tidy up the docs"), session_id=SID)
        (workspace / "notes.txt").write_text("rewritten by Claude\n")
        common: dict[str, Any] = {
            "kind": "tool",
            "turn_id": "ct1",
            "session_id": SID,
            "meta": {"agent": "claude-code"},
        }
        write = engine.checkpoint(
            label="notes.txt", changed_paths=["notes.txt"], tool="Write", tool_call_id="toolu_1", **common
        )
        (workspace / "README.md").unlink()
        bash = engine.checkpoint(label="rm README.md", tool="Bash", tool_call_id="toolu_2", **common)
    return write.id, bash.id


async def tree(editor: EditorClient) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/timeline/tree", {"outline": True, "maxRows": 100})
    validate("#/$defs/TimelineTreeResult", result)
    return result


@pytest.mark.timeout(300)
async def test_an_agent_session_in_the_tree_and_its_restores(workspace: Path, store: Path) -> None:
    write, bash = seed(workspace, store)
    editor = await start_editor(workspace, store)
    try:
        answer = await tree(editor)
        story = next(s for s in answer["sessions"] if s["session"]["id"] == SID)
        session = story["session"]
        assert (session["agent"], session["agentTitle"], session["running"]) == (
            "claude-code",
            "Claude Code",
            True,
        )
        assert story["outline"] is False, "the running agent session is the one paged"
        turn = next(i for i in story["items"] if i["kind"] == "turn")
        assert (turn["prompt"], turn["state"]) == ("tidy up the docs", "running")
        titles = [r["title"] for r in turn["rows"]]
        assert titles == ["Write: notes.txt", "Bash: rm README.md"]
        listed = await editor.request("retrace/timeline/get", {})
        assert next(s for s in listed["sessions"] if s["id"] == SID)["running"] is True
        reason = "Claude Code keeps its own conversation; Retrace restores only the code"
        assert all(r["conversationRestore"] == {"available": False, "reason": reason} for r in turn["rows"])

        for mode in ("conversation", "both"):
            refused = await editor.request_error("retrace/checkpoint/restore", {"id": write, "mode": mode})
            assert refused.data["code"] == "conversationNotRestorable", refused
            assert reason in refused.message

        refused = await editor.request_error("retrace/checkpoint/restore", {"id": write, "mode": "code"})
        assert refused.data["code"] == "agentTurnRunning", refused
        assert "Claude Code" in refused.message and SID in refused.message and "since" in refused.message
        assert not (workspace / "README.md").exists(), "a refused restore changes nothing"

        preview = await editor.request(
            "retrace/checkpoint/restore", {"id": write, "mode": "code", "dryRun": True}
        )
        assert [(t["agent"], t["sessionId"], t["turnId"]) for t in preview["agentTurns"]] == [
            ("claude-code", SID, "ct1")
        ]
        done = await editor.request(
            "retrace/checkpoint/restore", {"id": write, "mode": "code", "whileAgentRuns": "proceed"}
        )
        assert done["outcome"]["kind"] == "applied", done
        assert (workspace / "README.md").read_text().startswith("# Sample")
        assert (workspace / "notes.txt").read_text() == "rewritten by Claude\n"
        assert bash
    finally:
        await stop_editor(editor)
