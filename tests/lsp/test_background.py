"""Background commands over the real server and the fake model.

A background command writes a file, waits, writes another across two turns: its output and exit
status reach the model at the next turns' prompts, and its file changes are in ``background``
checkpoints of their own, never in the neighbouring tool calls'. The user lists and stops
background commands; a code restore while one runs is refused without a choice and works with
``stop``; server shutdown and a server crash (then a restart) leave no process of its group.
The tests wait on files and events, never on time.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import (
    AUTO,
    EditorClient,
    fake_model,
    model_env,
    start_editor,
    stop_editor,
    wait_until,
)
from tests.process_support import live_group_members

from retrace.offline import FakeModel

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc"),
]


def prompts_sent(model: FakeModel) -> list[str]:
    """The text of every user prompt message the model was sent (newest request's view)."""
    texts: list[str] = []
    for message in model.requests[-1]["messages"]:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, list):
            texts.extend(b["text"] for b in content if b.get("type") == "text")
    return texts


async def checkpoints(editor: EditorClient, session_id: str) -> list[dict[str, Any]]:
    timeline = await editor.request("retrace/timeline/get", {"sessionId": session_id})
    return list(timeline["checkpoints"])


def paths(cp: dict[str, Any]) -> set[str]:
    return {f["path"] for f in cp.get("files", [])}


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    folder = tmp_path / "gate"
    folder.mkdir()
    return folder


@pytest.fixture
def model() -> Any:
    started = fake_model("background")
    yield started
    started.stop()


@pytest.fixture
def serve_model() -> Any:
    started = fake_model("background-serve")
    yield started
    started.stop()


async def test_background_command_across_turns(
    workspace: Path, store: Path, gate: Path, model: FakeModel
) -> None:
    env = {**model_env(model), "RETRACE_TEST_GATE": str(gate)}
    editor = await start_editor(workspace, store, env=env, settings=AUTO)
    try:
        first = await editor.run_turn("start dev")
        sid = first["sessionId"]
        started = editor.events_of("toolCallFinished", first["turnId"])[0]
        assert started["status"] == "ok" and "bg-1" in started["output"], started
        listed = await editor.request("retrace/background/list", {})
        assert [t["handle"] for t in listed["tasks"]] == ["bg-1"]
        assert listed["tasks"][0]["state"] == "running"

        (gate / "go1").touch()
        await wait_until(
            lambda: (workspace / "a.txt").exists() and (workspace / "a.txt").read_text() == "one\n"
        )
        second = await editor.run_turn("status check", session_id=sid)
        news = [t for t in prompts_sent(model) if t.startswith("[Retrace: news of background")]
        assert len(news) == 1 and "bg-1" in news[0] and "still running" in news[0], news
        assert "started" in news[0]
        foreground = editor.events_of("toolCallFinished", second["turnId"])[0]
        assert foreground["tool"] == "run_command" and foreground["output"].startswith("one\n")
        assert "bg-1" in foreground["output"] and "were running" in foreground["output"], foreground

        (gate / "go2").touch()
        await editor.wait_for_event(
            lambda e: e["kind"] == "backgroundTask" and e["task"]["state"] == "exited"
        )
        await editor.run_turn("final check", session_id=sid)
        news = [t for t in prompts_sent(model) if t.startswith("[Retrace: news of background")]
        assert len(news) == 2, news
        assert "exited with code 3" in news[1] and "wrote b" in news[1], news[1]
        assert sum(n.count("wrote a") for n in news) == 1, news
        assert "\nstarted" not in news[1], "output is reported once"

        cps = await checkpoints(editor, sid)
        background = [cp for cp in cps if cp["kind"] == "background"]
        assert [paths(cp) for cp in background] == [{"a.txt"}, {"b.txt"}], background
        for cp in background:
            assert cp["label"].startswith("background: printf 'started"), cp["label"]
            assert cp["meta"]["background"][0]["handle"] == "bg-1"
        assert background[0]["turnId"] == second["turnId"]
        tools = [paths(cp) for cp in cps if cp["kind"] == "tool"]
        assert tools == [set(), {"neighbour.txt"}, set(), {"c.txt"}], tools
        assert not [cp for cp in cps if cp["kind"] == "external"], (
            "a background command's work is not external"
        )
        ended = await editor.request("retrace/background/list", {"includeEnded": True})
        assert ended["tasks"][0]["exitCode"] == 3
        assert (await editor.request("retrace/background/list", {}))["tasks"] == []
    finally:
        await stop_editor(editor)


async def _serve(editor: EditorClient, text: str, session_id: str | None = None) -> dict[str, Any]:
    """Start a long-running background command; its task as listed."""
    await editor.run_turn(text, session_id=session_id)
    running = (await editor.request("retrace/background/list", {}))["tasks"]
    task = running[-1]
    await wait_until(lambda: len(live_group_members(task["pid"])) >= 2)  # the shell and its sleep
    return dict(task)


async def test_list_stop_restore_and_shutdown(workspace: Path, store: Path, serve_model: FakeModel) -> None:
    editor = await start_editor(workspace, store, env=model_env(serve_model), settings=AUTO)
    try:
        baseline = (await editor.request("retrace/timeline/get", {}))["head"]
        (workspace / "README.md").write_text("changed by hand\n")
        task = await _serve(editor, "serve 1")
        sid = task["sessionId"]

        refused = await editor.request_error("retrace/checkpoint/restore", {"id": baseline, "mode": "code"})
        assert refused.data["code"] == "backgroundTasksRunning", refused
        assert "1 background command is running" in refused.message and "sleep 300" in refused.message
        assert live_group_members(task["pid"]), "a refused restore stops nothing"

        preview = await editor.request(
            "retrace/checkpoint/restore", {"id": baseline, "mode": "code", "dryRun": True}
        )
        assert [t["handle"] for t in preview["backgroundTasks"]] == [task["handle"]]

        restored = await editor.request(
            "retrace/checkpoint/restore",
            {"id": baseline, "mode": "code", "backgroundTasks": "stop", "force": True},
        )
        assert restored["outcome"]["kind"] == "applied", restored
        assert restored["backgroundTasks"][0]["state"] == "stopped"
        assert live_group_members(task["pid"]) == []
        assert (await editor.request("retrace/background/list", {}))["tasks"] == []

        second = await _serve(editor, "serve 2", sid)
        stopped = await editor.request("retrace/background/stop", {"handle": second["handle"]})
        assert stopped["task"]["state"] == "stopped" and stopped["task"]["stoppedBy"] == "user"
        assert live_group_members(second["pid"]) == []
        unknown = await editor.request_error("retrace/background/stop", {"handle": "bg-99"})
        assert "unknown background task" in unknown.message

        third = await _serve(editor, "serve 3", sid)
    finally:
        await stop_editor(editor)
    assert live_group_members(third["pid"]) == [], "server shutdown kills the group"
    assert not (store / "runtime" / "background.json").exists()


async def test_a_crashed_servers_background_commands_end_at_the_next_start(
    workspace: Path, store: Path, serve_model: FakeModel
) -> None:
    model = serve_model
    env = model_env(model)
    editor = await start_editor(workspace, store, env=env, settings=AUTO)
    try:
        task = await _serve(editor, "serve 1")
        assert (store / "runtime" / "background.json").exists()
        server = editor.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
    finally:
        await editor.client.stop()
    assert live_group_members(task["pid"]), "start_new_session: the group outlives a killed server"

    resumed = await start_editor(workspace, store, env=env, settings=AUTO)
    try:
        await resumed.request("retrace/timeline/get", {})
        assert live_group_members(task["pid"]) == []
        assert not (store / "runtime" / "background.json").exists()
        await resumed.run_turn("serve 2", session_id=task["sessionId"])
        news = [t for t in prompts_sent(model) if t.startswith("[Retrace: news of background")]
        assert len(news) == 1 and "bg-1" in news[0] and "server exited" in news[0], news
        listed = (await resumed.request("retrace/background/list", {}))["tasks"]
        assert [t["handle"] for t in listed] == ["bg-2"], "handles continue after the leftovers"
    finally:
        await stop_editor(resumed)
