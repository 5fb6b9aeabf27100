"""kill -9 the real server while a subagent runs, restart it on the same store: the parent's
``task`` call is interrupted (never re-run), the child is ``interrupted`` with its own timeline
intact, nothing of it reached the workspace, and the user can apply its work or discard it."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from tests.lsp.lsp_support import AUTO, fake_model, model_env, start_editor, stop_editor

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_kill_while_a_subagent_runs_then_apply_and_discard(workspace: Path, store: Path) -> None:
    model = fake_model("subagents")
    try:
        env = model_env(model)
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        prompt = await editor.request("retrace/agent/prompt", {"text": "delegate"})
        sid = prompt["sessionId"]
        await editor.wait_for_event(lambda e: e["kind"] == "taskProgress" and e["toolCalls"] >= 1)
        await asyncio.sleep(0.5)  # the child's long command has started
        server = editor.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        await editor.client.stop()
        assert not (workspace / "made").exists()

        resumed = await start_editor(workspace, store, env=env, settings=AUTO)
        try:
            listed = await resumed.request("retrace/tasks/list", {"sessionId": sid})
            [task] = listed["tasks"]
            assert task["status"] == "interrupted"
            conv = await resumed.request("retrace/conversation/get", {"sessionId": sid})
            assert task["toolCallId"] in conv["toolStatuses"], "the parent's task call was lost"
            assert conv["toolStatuses"][task["toolCallId"]] == "interrupted"
            assert len(model.requests) == 3, "a request after the restart: something ran again"

            child = await resumed.request(
                "retrace/tasks/timeline", {"sessionId": sid, "taskId": task["taskId"]}
            )
            tools = [c["tool"] for c in child["checkpoints"] if c["kind"] == "tool"]
            assert tools[:1] == ["write_file"]

            ref = {"sessionId": sid, "taskId": task["taskId"]}
            applied = await resumed.request("retrace/tasks/apply", ref)
            assert applied["written"] == ["made/by-child.txt"]
            assert applied["checkpoint"]["files"][0]["path"] == "made/by-child.txt"
            assert (workspace / "made/by-child.txt").read_text() == "from the child\n"

            await resumed.request("retrace/tasks/discard", {"sessionId": sid, "taskId": task["taskId"]})
            listed = await resumed.request("retrace/tasks/list", {"sessionId": sid})
            assert [t["status"] for t in listed["tasks"]] == ["discarded"]
            gone = await resumed.request_error(
                "retrace/tasks/timeline", {"sessionId": sid, "taskId": task["taskId"]}
            )
            assert "discarded" in gone.message
            assert not any((store / "tasks").iterdir())
        finally:
            await stop_editor(resumed)
    finally:
        model.stop()


async def test_kill_while_a_subagent_runs_then_resume_it(workspace: Path, store: Path) -> None:
    model = fake_model("subagents")
    try:
        env = model_env(model)
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        sid = (await editor.request("retrace/agent/prompt", {"text": "delegate"}))["sessionId"]
        await editor.wait_for_event(lambda e: e["kind"] == "taskProgress" and e["toolCalls"] >= 1)
        await asyncio.sleep(0.5)
        server = editor.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        await editor.client.stop()

        resumed = await start_editor(workspace, store, env=env, settings=AUTO)
        try:
            [task] = (await resumed.request("retrace/tasks/list", {"sessionId": sid}))["tasks"]
            assert task["status"] == "interrupted"
            ref = {"sessionId": sid, "taskId": task["taskId"]}
            assert (await resumed.request("retrace/tasks/resume", ref))["started"] is True
            again = await resumed.request_error("retrace/tasks/resume", ref)
            assert "running" in again.message or "already" in again.message
            await resumed.wait_for_event(lambda e: e["kind"] == "taskProgress" and e["status"] == "merged")
            assert (workspace / "made/by-child.txt").read_text() == "from the child\n"
            [task] = (await resumed.request("retrace/tasks/list", {"sessionId": sid}))["tasks"]
            assert task["status"] == "merged" and task["merged"] == ["made/by-child.txt"]
            # The child was told it was cut off, its interrupted command answered, not re-run.
            last = model.requests[-1]
            texts = [str(m["content"]) for m in last["messages"]]
            assert any("interrupted" in t for t in texts)
            assert any("cut off" in t for t in texts)
            child = await resumed.request("retrace/tasks/timeline", ref)
            commands = [c for c in child["checkpoints"] if c.get("tool") == "run_command"]
            assert len(commands) <= 1, "the interrupted command ran again"
        finally:
            await stop_editor(resumed)
    finally:
        model.stop()
