"""Remote sync in the real server, against a real S3 server (``rclone serve s3``).

One machine: the remote comes from the ``retrace.remote.*`` settings and the credentials from the
environment; an agent turn's checkpoints are pushed by the server's scheduler (progress
notifications, objects in the bucket, status). A second machine (another workspace and store,
another server process) lists the session, opens it, sees it in its timeline and restores one of
its checkpoints, whose files come from the remote; when the first machine goes on with the
session, the second pulls the new turn. A remote that is down never holds up a turn:
the turn completes and the status reports the error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor, wait_until
from tests.net_support import free_port
from tests.remote.s3server import S3Server, serving

from retrace.offline import FakeModel

pytestmark = pytest.mark.slow


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    with serving(tmp_path / "s3data") as server:
        yield server


def remote_settings(endpoint: str, url: str, **extra: Any) -> dict[str, Any]:
    return {**AUTO, "remote": {"url": url, "endpoint": endpoint, "workspaceName": "proj", **extra}}


def synced(editor: EditorClient) -> bool:
    return any(
        p["state"] == "synced" and (p["lastReport"] or {}).get("segments", 0) > 0
        for p in editor.remote_progress
    )


async def test_a_turn_is_pushed_and_another_machine_opens_and_restores_it(
    workspace: Path, store: Path, tmp_path: Path, s3: S3Server, session_model: FakeModel
) -> None:
    settings = remote_settings(s3.endpoint, s3.url(), everyCheckpoints=2)
    env = {**model_env(session_model), **s3.env()}
    first = await start_editor(workspace, store, env=env, settings=settings)
    try:
        turn = await first.run_turn("first task")
        await wait_until(lambda: synced(first))
        states = [p["state"] for p in first.remote_progress]
        assert "pushing" in states and states[-1] in ("synced", "pushing")
        objects = s3.objects()
        assert any(key.startswith("team/proj/sessions/") and key.endswith(".seg") for key in objects), objects
        assert any(key.startswith("team/proj/packs/") and key.endswith(".pack") for key in objects), objects
        status = await first.request("retrace/remote/status", {})
        assert status["configured"] is True
        assert status["status"]["remote"] == "origin" and status["status"]["lastPush"] is not None
        assert status["status"]["lastError"] is None
        pushed = await first.request("retrace/remote/push", {})  # on demand
        assert pushed["report"]["remote"] == "origin"
        session_id = first.events_of("turnStarted", turn["turnId"])[0]["sessionId"]
        config = json.loads((store / "remote.json").read_text("utf-8"))
        assert "AWS" not in json.dumps(config) and s3.env()["AWS_SECRET_ACCESS_KEY"] not in json.dumps(config)
    finally:
        await stop_editor(first)

    other_ws = tmp_path / "other machine" / "proj"
    other_ws.mkdir(parents=True)
    other_store = tmp_path / "other machine" / "store"
    second = await start_editor(
        other_ws, other_store, env={**model_env(session_model), **s3.env()}, settings=settings
    )
    try:
        listed = (await second.request("retrace/remote/sessions", {}))["sessions"]
        mine = [s for s in listed if s["sessionId"] == session_id]
        assert mine and mine[0]["workspaceName"] == "proj" and mine[0]["openedLocally"] is False
        assert mine[0]["machine"] and mine[0]["bytes"] > 0
        changes_before = len(second.timeline_changes)
        opened = await second.request("retrace/remote/open", {"sessionId": session_id})
        assert opened["sessionId"] == session_id and opened["report"]["checkpoints"] >= 3
        await wait_until(lambda: len(second.timeline_changes) > changes_before)
        tree = await second.request("retrace/timeline/tree", {})
        story = next(s for s in tree["sessions"] if s["session"]["id"] == session_id)
        assert story["turnCount"] == 1 and story["rowCount"] >= 3, story
        listed = (await second.request("retrace/remote/sessions", {}))["sessions"]
        assert next(s for s in listed if s["sessionId"] == session_id)["openedLocally"] is True
        timeline = await second.request("retrace/timeline/get", {"sessionId": session_id})
        conversation = await second.request("retrace/conversation/get", {"sessionId": session_id})
        assert "first task" in json.dumps(conversation)

        # The first machine goes on with the session; the second pulls the new turn.
        first = await start_editor(workspace, store, env=env, settings=settings)
        try:
            await first.run_turn("second task", session_id=session_id)
        finally:
            await stop_editor(first)  # the last push is made at shutdown
        pulled = await second.request("retrace/remote/pull", {})
        assert pulled["report"]["segments"] >= 1, pulled
        grown = await second.request("retrace/timeline/get", {"sessionId": session_id})
        assert len(grown["checkpoints"]) > len(timeline["checkpoints"])
        tree = await second.request("retrace/timeline/tree", {})
        story = next(s for s in tree["sessions"] if s["session"]["id"] == session_id)
        assert story["turnCount"] == 2, story

        # Its newest checkpoint restored here: every file comes from the remote's blobs.
        last = [cp for cp in grown["checkpoints"] if cp["kind"] == "tool"][-1]
        restored = await second.request(
            "retrace/checkpoint/restore", {"id": last["id"], "mode": "code", "force": True}
        )
        assert restored["outcome"]["kind"] != "preview", restored
        assert (other_ws / "hello.txt").read_text("utf-8") == "hello 👋\n"
        assert "return 2" in (other_ws / "src" / "app.py").read_text("utf-8")
        assert (other_ws / "gen" / "out.txt").read_text("utf-8") == "out\n"
        assert "Sample (edited)" in (other_ws / "README.md").read_text("utf-8")
    finally:
        await stop_editor(second)


async def test_a_remote_that_is_down_never_holds_up_a_turn(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = {
        **model_env(session_model),
        "AWS_ACCESS_KEY_ID": "retrace-test-access",
        "AWS_SECRET_ACCESS_KEY": "x" * 20,
    }
    editor = await start_editor(
        workspace, store, env=env, settings=remote_settings(dead, "s3://bucket/team", everyCheckpoints=1)
    )
    try:
        turn = await editor.run_turn("first task")
        assert editor.events_of("turnFinished", turn["turnId"])[0]["stopReason"] != "error"
        assert len(editor.events_of("checkpointCreated", turn["turnId"])) >= 3
        await wait_until(lambda: any(p["state"] == "error" for p in editor.remote_progress))
        status = await editor.request("retrace/remote/status", {})
        assert status["sync"]["state"] in ("error", "pushing")
        error = next(p for p in editor.remote_progress if p["state"] == "error")
        assert error["lastError"] and error["retryInSeconds"] > 0
        assert "x" * 20 not in json.dumps(editor.remote_progress)
        failure = await editor.request_error("retrace/remote/push", {})
        assert (failure.data or {}).get("code") == "remoteError"
    finally:
        await stop_editor(editor)


async def test_without_a_remote_the_methods_say_so(editor: EditorClient) -> None:
    status = await editor.request("retrace/remote/status", {})
    assert status == {"configured": False, "status": None, "sync": status["sync"]}
    assert status["sync"]["state"] == "off"
    failure = await editor.request_error("retrace/remote/sessions", {})
    assert "no remote configured" in str(failure)


async def test_an_untrusted_workspace_cannot_send_the_code_to_a_bucket(
    workspace: Path, store: Path, session_model: FakeModel
) -> None:
    settings = remote_settings(f"http://127.0.0.1:{free_port()}", "s3://attacker/loot")
    editor = await start_editor(
        workspace, store, env=model_env(session_model), settings=settings, init_options={"trusted": False}
    )
    try:
        status = await editor.request("retrace/remote/status", {})
        assert status["configured"] is False and status["sync"]["state"] == "off"
        assert not (store / "remote.json").exists()
        failure = await editor.request_error("retrace/remote/open", {"sessionId": "ses_x"})
        assert (failure.data or {}).get("code") == "workspaceUntrusted"
    finally:
        await stop_editor(editor)
