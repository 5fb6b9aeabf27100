"""Concurrent sessions on one workspace (issue 5, item 6): two real servers, or a server and the
``retrace`` CLI, never silently revert each other's changes.

- Same store (two windows of one folder, or the CLI next to the extension): the store has one
  writer; the second gets a clear one-line "locked by another Retrace process (pid N)" error,
  changes nothing, and the first keeps working. Read-only CLI commands still work.
- Different stores on one workspace (two tools that do not share storage): each sees the other's
  writes as external work, so a restore never overwrites them: they are left alone or reported as
  conflicts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from tests.cli.cli_support import run
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor
from tests.oracles import entries
from tests.reliability.conftest import record_figures, turn_model

from retrace.engine import Engine
from retrace.offline import FakeModel

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _record() -> Iterator[None]:
    yield
    if FIGURES:
        record_figures("concurrency", "ci", FIGURES)


def model_for(turns: dict[str, list[dict[str, Any]]]) -> FakeModel:
    return cast(FakeModel, turn_model("concurrency", turns))


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "input": {"path": path, "content": content}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("v0\n", "utf-8")
    (root / "README.md").write_text("# shared\n", "utf-8")
    return root


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    # A fork of the CLI fork server (tests/cli_forkserver.py): a process of its own beside the server.
    return run([sys.executable, "-m", "retrace", *args], dict(os.environ), timeout=60)


async def test_second_server_on_the_same_store_is_refused(ws: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    model = model_for({"[[a1]]": [write("a.txt", "a1\n")], "[[a2]]": [write("a.txt", "a2\n")]})
    first = await start_editor(ws, store, env=model_env(model), settings=AUTO)
    try:
        turn = await first.run_turn("[[a1]]")
        pid = first.client._server.pid if first.client._server else None
        disk = entries(ws)
        second = await start_editor(ws, store, env=model_env(model), settings=AUTO)
        try:
            refused = [
                await second.request_error("retrace/timeline/get", {}),
                await second.request_error("retrace/agent/prompt", {"text": "[[a2]]"}),
                await second.request_error("retrace/checkpoint/restore", {"id": "head", "mode": "code"}),
            ]
        finally:
            await stop_editor(second)
        for error in refused:
            assert "locked" in error.message and f"pid {pid}" in error.message, error.message
            assert "\n" not in error.message
        assert entries(ws) == disk, "the refused server changed the workspace"
        # The first server is unaffected.
        await first.run_turn("[[a2]]", session_id=turn["sessionId"])
        assert (ws / "a.txt").read_text("utf-8") == "a2\n"
    finally:
        await stop_editor(first)
        model.stop()
    with Engine.open(ws, store) as engine:  # the lock was released: a new writer opens
        assert engine.problems == []
    FIGURES["sameStoreSecondServer"] = {"refusedCalls": len(refused), "message": refused[0].message}


async def test_cli_next_to_a_running_server(ws: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    model = model_for({"[[s1]]": [write("src/app.py", "server\n")]})
    editor = await start_editor(ws, store, env=model_env(model), settings=AUTO)
    try:
        await editor.run_turn("[[s1]]")
        timeline = await editor.request("retrace/timeline/get", {})
        baseline = timeline["checkpoints"][0]["id"]
        disk = entries(ws)
        listed = cli("log", "--workspace", str(ws), "--store", str(store))
        assert listed.returncode == 0, listed.stderr
        assert all(cp["id"] in listed.stdout for cp in timeline["checkpoints"])
        refused = cli("restore", baseline, "--workspace", str(ws), "--store", str(store), "--force")
        assert refused.returncode != 0
        message = refused.stderr.strip()
        assert "locked" in message and len(message.splitlines()) == 1, message
        assert entries(ws) == disk, "the CLI reverted the server's work while refusing"
        # A checkpoint is not refused: the server holding the store takes it over the relay
        # socket (issue 26), and it joins the server's timeline once.
        marked = cli("checkpoint", "--workspace", str(ws), "--store", str(store))
        assert marked.returncode == 0, marked.stderr
        after = await editor.request("retrace/timeline/get", {})
        before_ids = [cp["id"] for cp in timeline["checkpoints"]]
        assert [cp["id"] for cp in after["checkpoints"]] == [*before_ids, marked.stdout.strip()]
    finally:
        await stop_editor(editor)
        model.stop()
    done = cli("restore", baseline, "--workspace", str(ws), "--store", str(store), "--force")
    assert done.returncode == 0, done.stderr
    assert (ws / "src" / "app.py").read_text("utf-8") == "v0\n"
    FIGURES["cliNextToServer"] = {
        "refusedWrites": 1,
        "forwardedCheckpoints": 1,
        "readOnlyCommandsServed": 1,
        "message": message,
    }


async def test_two_stores_on_one_workspace_never_revert_each_other(ws: Path, tmp_path: Path) -> None:
    model_a = model_for({"[[a1]]": [write("src/app.py", "from A\n")], "[[a2]]": [write("shared.txt", "A\n")]})
    model_b = model_for({"[[b1]]": [write("b.txt", "from B\n")], "[[b2]]": [write("shared.txt", "B\n")]})
    a = await start_editor(ws, tmp_path / "store-a", env=model_env(model_a), settings=AUTO)
    b = await start_editor(ws, tmp_path / "store-b", env=model_env(model_b), settings=AUTO)
    conflicts: list[str] = []
    try:
        b_base = (await b.request("retrace/timeline/get", {}))["checkpoints"][0]["id"]
        await b.run_turn("[[b2]]")  # B writes shared.txt …
        b_after = _last_checkpoint(b)
        await a.run_turn("[[a1]]")  # … then A changes app.py and shared.txt
        await a.run_turn("[[a2]]")
        await b.run_turn("[[b1]]")
        # B goes back to its baseline: only B's own work may go; A's is never silently reverted.
        result = await b.request("retrace/checkpoint/restore", {"id": b_base, "mode": "code"})
        outcome = result["outcome"]
        conflicts = [f["path"] for f in outcome["files"] if f["status"] == "conflict"]
        assert (ws / "src" / "app.py").read_text("utf-8") == "from A\n", outcome
        assert (ws / "shared.txt").read_text("utf-8") == "A\n", outcome
        assert "shared.txt" in conflicts, outcome
        if outcome["kind"] == "applied":
            assert not (ws / "b.txt").exists()
        # Going to B's own later checkpoint does not clobber A's version of shared.txt either.
        again = await b.request("retrace/checkpoint/restore", {"id": b_after, "mode": "code"})
        assert (ws / "shared.txt").read_text("utf-8") == "A\n", again
        # A still sees its own timeline intact and the workspace as it left it.
        a_timeline = await a.request("retrace/timeline/get", {})
        assert a_timeline["checkpoints"]
    finally:
        await stop_editor(a)
        await stop_editor(b)
        model_a.stop()
        model_b.stop()
    FIGURES["twoStoresOneWorkspace"] = {"conflictsReported": conflicts, "foreignFilesOverwritten": 0}


def _last_checkpoint(editor: EditorClient) -> str:
    return str(editor.events_of("checkpointCreated")[-1]["checkpoint"]["id"])
