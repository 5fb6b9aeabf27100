"""A hunk restore is a restore like any other (real server, real background processes):

* it is counted in the restore metrics (``retrace/metrics/get``: mode ``hunk``, its latency) and
  the health view names the mode;
* it checks background commands like a code restore: refused with ``backgroundTasksRunning``
  (nothing written, nothing stopped) unless ``backgroundTasks: "keep" | "stop"``; the answer
  lists them as they are after it.
"""

from __future__ import annotations

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

README = "# Sample\n\nA small project.\n"


@pytest.fixture
def serve_model() -> Any:
    started = fake_model("background-serve")
    yield started
    started.stop()


async def _hunk_args(editor: EditorClient, cp: str, path: str) -> dict[str, Any]:
    listed = await editor.request("retrace/restore/hunks", {"checkpoint": cp, "path": path})
    assert listed["hunks"], listed
    return {
        "checkpoint": cp,
        "path": path,
        "hunk": listed["hunks"][0]["id"],
        "expectedHash": listed["currentHash"],
    }


async def test_hunk_restore_checks_background_commands_and_is_counted(
    workspace: Path, store: Path, serve_model: FakeModel
) -> None:
    editor = await start_editor(workspace, store, env=model_env(serve_model), settings=AUTO)
    try:
        baseline = (await editor.request("retrace/timeline/get", {}))["head"]
        await editor.run_turn("serve 1")
        task = (await editor.request("retrace/background/list", {}))["tasks"][-1]
        await wait_until(lambda: len(live_group_members(task["pid"])) >= 2)
        readme = workspace / "README.md"
        readme.write_text(README + "typed by hand\n", "utf-8")

        refused = await editor.request_error(
            "retrace/restore/hunk", await _hunk_args(editor, baseline, "README.md")
        )
        assert refused.data["code"] == "backgroundTasksRunning", refused
        assert "sleep 300" in refused.message
        assert readme.read_text("utf-8") == README + "typed by hand\n", "a refusal writes nothing"
        assert live_group_members(task["pid"]), "a refusal stops nothing"

        kept = await editor.request(
            "retrace/restore/hunk",
            {**await _hunk_args(editor, baseline, "README.md"), "backgroundTasks": "keep"},
        )
        assert readme.read_text("utf-8") == README
        assert [t["handle"] for t in kept["backgroundTasks"]] == [task["handle"]]
        assert kept["backgroundTasks"][0]["state"] == "running" and live_group_members(task["pid"])

        readme.write_text(README + "again\n", "utf-8")
        stopped = await editor.request(
            "retrace/restore/hunk",
            {**await _hunk_args(editor, baseline, "README.md"), "backgroundTasks": "stop"},
        )
        assert readme.read_text("utf-8") == README
        assert stopped["backgroundTasks"][0]["state"] == "stopped"
        assert live_group_members(task["pid"]) == []

        # No background command now: no choice needed.
        readme.write_text(README + "third\n", "utf-8")
        plain = await editor.request("retrace/restore/hunk", await _hunk_args(editor, baseline, "README.md"))
        assert plain["backgroundTasks"] == []

        metrics = await editor.request("retrace/metrics/get", {})
        assert metrics["restoresByMode"].get("hunk") == 3, metrics["restoresByMode"]
        assert len(metrics["restoreSeconds"]) >= 3
        assert 'mode="hunk"' in metrics["text"]
        health = await editor.request("retrace/health/get", {})
        modes = {m["label"]: m["count"] for m in health["restoresByMode"]}
        assert modes.get("One hunk") == 3, health["restoresByMode"]
    finally:
        await stop_editor(editor)
