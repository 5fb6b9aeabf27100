"""One stats pipeline: the CLI's ``retrace stats --json`` and the running server's
``retrace/stats`` (the status bar) report the same figures for the same store.

A real server (fake Messages API) and the real CLI beside it (read-only, no lock): after a
session with tool calls, a restore, a subagent store left under ``tasks/`` and a CLI checkpoint of
another session, and again after a checkpoint line is damaged on disk, every figure the CLI
prints — sessions, checkpoints, blobs, bytes, capture and restore latencies, restores,
subagents — equals the server's. The server may write its caches between two readings (the
storage series, the history index): the comparison is taken when two server answers around the
CLI's agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.cli.cli_support import Cli
from tests.lsp.lsp_support import EditorClient

from retrace.engine.store.layout import StoreLayout

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def same_figures(editor: EditorClient, cli: Cli) -> dict[str, Any]:
    """The CLI's figures, checked equal to the server's answers taken just before and after."""
    for _ in range(5):
        before = (await editor.request("retrace/stats", {}))["store"]
        printed = cli.json("stats")
        after = (await editor.request("retrace/stats", {}))["store"]
        if before == after:
            assert printed == after
            return dict(printed)
    raise AssertionError("the server's figures kept changing")


def damage_a_checkpoint_line(store: Path, sid: str) -> None:
    """Change one digit inside a tool checkpoint's line: valid JSON, a seal that no longer holds."""
    journal = StoreLayout(store).journal(sid)
    lines = journal.read_bytes().split(b"\n")
    index = next(i for i, line in enumerate(lines) if b'"kind":"tool"' in line and b'"captureMs":' in line)
    at = lines[index].index(b'"captureMs":') + len(b'"captureMs":')
    digit = lines[index][at : at + 1]
    lines[index] = lines[index][:at] + (b"7" if digit != b"7" else b"8") + lines[index][at + 1 :]
    journal.write_bytes(b"\n".join(lines))


async def test_the_cli_and_the_server_report_the_same_figures(
    editor: EditorClient, workspace: Path, store: Path
) -> None:
    cli = Cli(workspace, store)
    baseline = await same_figures(editor, cli)
    assert baseline["checkpoints"] == 1 and baseline["sessions"] >= 1

    turn = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", turn["turnId"])]
    applied = await editor.request("retrace/checkpoint/restore", {"id": created[0]["id"], "mode": "code"})
    assert applied["outcome"]["kind"] == "applied"
    child = store / "tasks" / "task-1"  # a subagent's own store, as a finished child leaves it
    (child / "store").mkdir(parents=True)
    (child / "store" / "blob").write_bytes(b"x" * 5000)
    (workspace / "README.md").write_text("# Changed from a terminal\n", "utf-8")
    cli("checkpoint", "--label", "from the terminal")

    figures = await same_figures(editor, cli)
    assert figures["checkpoints"] >= len(created) + 3  # baseline, the turn's, the restore, the CLI's
    assert (figures["restores"], figures["restoresSucceeded"], figures["restore"]["count"]) == (1, 1, 1)
    assert figures["sessions"] >= 2 and figures["blobs"] > 0 and figures["journalBytes"] > 0
    assert figures["subagents"]["bytes"] >= 5000
    assert figures["totalBytes"] >= figures["journalBytes"] + figures["subagents"]["bytes"]

    damage_a_checkpoint_line(store, turn["sessionId"])
    damaged = await same_figures(editor, cli)
    assert damaged["checkpoints"] == figures["checkpoints"] - 1  # left out of both; verify reports it
