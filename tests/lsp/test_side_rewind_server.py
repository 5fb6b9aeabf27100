"""Over the real server: a conversation restore stops the background commands started after its
target (earlier ones keep running) and says so in its result; a code-only restore is told to the
model at the session's next prompt, as a ``[Retrace note:`` block before the user's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, fake_model, model_env, start_editor, stop_editor, wait_until
from tests.process_support import live_group_members

from retrace.offline import FakeModel

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc"),
]


@pytest.fixture
def serve_model() -> Any:
    started = fake_model("background-serve")
    yield started
    started.stop()


def prompt_texts(model: FakeModel, prompt: str) -> list[str]:
    """The text blocks of the user message whose last block is ``prompt`` (newest request)."""
    for message in model.requests[-1]["messages"]:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, list):
            texts = [b["text"] for b in content if b.get("type") == "text"]
            if texts and texts[-1] == prompt:
                return texts
    raise AssertionError(f"no prompt {prompt!r} was sent")


async def test_conversation_restore_stops_later_background_commands_and_code_restore_is_told(
    workspace: Path, store: Path, serve_model: FakeModel
) -> None:
    editor = await start_editor(workspace, store, env=model_env(serve_model), settings=AUTO)
    try:
        first = await editor.run_turn("serve 1")
        sid = first["sessionId"]
        timeline = await editor.request("retrace/timeline/get", {"sessionId": sid})
        target = [cp for cp in timeline["checkpoints"] if cp["kind"] == "tool"][-1]["id"]
        (workspace / "README.md").write_text("changed by hand\n")  # recorded at the next turn
        await editor.run_turn("serve 2", session_id=sid)
        tasks = (await editor.request("retrace/background/list", {}))["tasks"]
        assert [t["handle"] for t in tasks] == ["bg-1", "bg-2"]
        await wait_until(lambda: len(live_group_members(tasks[1]["pid"])) >= 2)

        restored = await editor.request("retrace/checkpoint/restore", {"id": target, "mode": "conversation"})
        assert [(t["handle"], t["state"], t.get("stoppedBy")) for t in restored["backgroundTasks"]] == [
            ("bg-1", "running", None),
            ("bg-2", "stopped", "restore"),
        ]
        assert live_group_members(tasks[1]["pid"]) == []
        assert live_group_members(tasks[0]["pid"]), "started before the target: still running"
        running = (await editor.request("retrace/background/list", {}))["tasks"]
        assert [t["handle"] for t in running] == ["bg-1"]

        code = await editor.request(
            "retrace/checkpoint/restore",
            {"id": target, "mode": "code", "backgroundTasks": "keep", "force": True},
        )
        assert code["outcome"]["kind"] == "applied", code
        await editor.run_turn("serve 3", session_id=sid)
        texts = prompt_texts(serve_model, "serve 3")
        notes = [t for t in texts if t.startswith("[Retrace note: the workspace files were restored")]
        assert len(notes) == 1 and "README.md" in notes[0] and target in notes[0], texts
    finally:
        await stop_editor(editor)
