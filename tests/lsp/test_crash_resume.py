"""kill -9 the real server during a long run_command (after a completed edit), restart it on the
same store: the timeline is intact, the interrupted call is reported, and no tool runs twice.
Also: a headless client (no workspace/applyEdit) restores on disk through the engine."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tests.lsp.lsp_support import AUTO, fake_model, model_env, start_editor, stop_editor, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_kill_during_long_command_then_resume(workspace: Path, store: Path) -> None:
    model = fake_model("crash")
    try:
        env = model_env(model)
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        counter = workspace / "counter.txt"
        prompt = await editor.request("retrace/agent/prompt", {"text": "long task"})
        session_id = prompt["sessionId"]
        edit_event = await editor.wait_for_event(
            lambda e: e["kind"] == "checkpointCreated" and e["checkpoint"]["tool"] == "edit_file"
        )
        edit_cp = edit_event["checkpoint"]
        await editor.wait_for_event(lambda e: e["kind"] == "toolCallStarted" and e["tool"] == "run_command")
        await wait_until(lambda: counter.exists() and counter.read_text() == "ran\n")
        busy = await editor.request_error("retrace/checkpoint/restore", {"id": edit_cp["id"], "mode": "code"})
        assert "running" in busy.message

        server = editor.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        await editor.client.stop()
        assert (workspace / "notes.txt").read_bytes() == b"done: one\r\ntodo: two\r\n"

        resumed = await start_editor(workspace, store, env=env, settings=AUTO)
        try:
            timeline = await resumed.request("retrace/timeline/get", {"sessionId": session_id})
            ids = [cp["id"] for cp in timeline["checkpoints"]]
            assert edit_cp["id"] in ids, "a completed tool call's checkpoint was lost"
            restored = await resumed.request(
                "retrace/checkpoint/fileContent", {"id": edit_cp["id"], "path": "notes.txt"}
            )
            assert restored["text"] == "done: one\r\ntodo: two\r\n"

            conversation = await resumed.request("retrace/conversation/get", {"sessionId": session_id})
            results = [
                block
                for message in conversation["messages"]
                for block in message["content"]
                if block.get("type") == "tool_result"
            ]
            assert any("interrupted" in str(block.get("content")) for block in results), results
            # The client is told how each call ended (it shows "interrupted", not a guess).
            statuses = conversation["toolStatuses"]
            assert "interrupted" in statuses.values(), statuses
            assert "ok" in statuses.values(), statuses

            follow = await resumed.run_turn("after restart", session_id=session_id)
            assert resumed.events_of("toolCallStarted", follow["turnId"]) == []
            assert counter.read_text() == "ran\n", "the interrupted command ran again"
            # The counter change made by the killed command is recorded, not lost.
            after = await resumed.request(
                "retrace/checkpoint/fileContent", {"id": "current", "path": "counter.txt"}
            )
            assert after["text"] == "ran\n"
            history = await resumed.request("retrace/timeline/get", {})
            recorded = []
            for cp in history["checkpoints"]:
                if any(f["path"] == "counter.txt" for f in cp["files"]):
                    recorded.append(cp["kind"])
            assert recorded, "the interrupted command's side effect was never captured"
        finally:
            await stop_editor(resumed)
    finally:
        model.stop()


async def test_cancel_stops_a_running_command(workspace: Path, store: Path) -> None:
    model = fake_model("crash")
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        prompt = await editor.request("retrace/agent/prompt", {"text": "long task"})
        await editor.wait_for_event(lambda e: e["kind"] == "toolCallStarted" and e["tool"] == "run_command")
        cancelled = await editor.request("retrace/agent/cancel", {"sessionId": prompt["sessionId"]})
        assert cancelled == {"cancelled": True}
        finished = await editor.wait_for_event(lambda e: e["kind"] == "turnFinished")
        assert finished["stopReason"] == "cancelled"
        again = await editor.request("retrace/agent/cancel", {"sessionId": prompt["sessionId"]})
        assert again == {"cancelled": False}
        sessions = await editor.request("retrace/session/list")
        assert all(not s["running"] for s in sessions["sessions"])
    finally:
        await stop_editor(editor)
        model.stop()


async def test_headless_client_restores_on_disk(workspace: Path, store: Path) -> None:
    model = fake_model("session")
    try:
        editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO, apply_edit=False)
        try:
            turn = await editor.run_turn("first task")
            created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", turn["turnId"])]
            result = await editor.request(
                "retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "both"}
            )
            assert result["outcome"]["kind"] == "applied", result
            assert result["conversationHead"] is not None
            assert editor.applied_edits == []
            assert not (workspace / "counter.txt").exists()
            assert "return 1" in (workspace / "src" / "app.py").read_text("utf-8")
        finally:
            await stop_editor(editor)
    finally:
        model.stop()
