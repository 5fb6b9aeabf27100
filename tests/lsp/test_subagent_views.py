"""A subagent's own timeline over the protocol of a real server: the same tree, detail, diff and
file-content requests scoped to the child (``task``), and a restore inside its workspace copy
that leaves the user's workspace alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.lsp.lsp_support import AUTO, fake_model, model_env, start_editor, stop_editor

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_a_childs_timeline_reads_and_restores_in_its_own_copy(workspace: Path, store: Path) -> None:
    model = fake_model("subagent_views")
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    try:
        sid = (await editor.run_turn("delegate"))["sessionId"]
        [task] = (await editor.request("retrace/tasks/list", {"sessionId": sid}))["tasks"]
        assert task["status"] == "merged" and task["merged"] == ["notes/one.txt"]
        assert (workspace / "notes/one.txt").read_text() == "one, then two\n"
        ref = {"sessionId": sid, "taskId": task["taskId"]}

        tree = await editor.request("retrace/timeline/tree", {"task": ref})
        rows = [
            row
            for story in tree["sessions"]
            for item in story["items"]
            for row in (item["rows"] if item["kind"] == "turn" else [item])
        ]
        tools = [r for r in rows if r["checkpoint"]["kind"] == "tool"]
        assert [r["title"] for r in tools] == ["write_file: notes/one.txt"] * 2
        first, second = (r["checkpoint"]["id"] for r in tools)
        assert tree["head"] == second

        detail = await editor.request("retrace/checkpoint/get", {"id": second, "task": ref})
        assert detail["checkpoint"]["files"][0]["path"] == "notes/one.txt"
        patch = await editor.request("retrace/checkpoint/diff", {"from": first, "to": second, "task": ref})
        assert "+one, then two" in patch["patch"]
        old = await editor.request(
            "retrace/checkpoint/fileContent", {"id": first, "path": "notes/one.txt", "task": ref}
        )
        assert old["text"] == "one\n"
        # An id of the child's is unknown to the workspace's own timeline, and the reverse.
        missing = await editor.request_error("retrace/checkpoint/get", {"id": second})
        assert "unknown" in missing.message.lower()

        preview = await editor.request(
            "retrace/checkpoint/restore", {"id": first, "mode": "code", "dryRun": True, "task": ref}
        )
        assert preview["outcome"]["kind"] == "preview"
        done = await editor.request("retrace/checkpoint/restore", {"id": first, "mode": "code", "task": ref})
        assert done["outcome"]["kind"] == "applied"
        now = await editor.request(
            "retrace/checkpoint/fileContent", {"id": "current", "path": "notes/one.txt", "task": ref}
        )
        assert now["text"] == "one\n"
        assert (workspace / "notes/one.txt").read_text() == "one, then two\n", "the user's file moved"

        both = await editor.request_error(
            "retrace/checkpoint/restore", {"id": first, "mode": "both", "task": ref}
        )
        assert "only code" in both.message
        unknown = await editor.request_error(
            "retrace/tasks/timeline", {"sessionId": sid, "taskId": "task_nope"}
        )
        assert "no subagent" in unknown.message
    finally:
        await stop_editor(editor)
        model.stop()
