"""Hand-off over a real server process with the fake Messages API: ``retrace/export/git``,
``retrace/attribution`` after a scripted session (agent edits + an external edit), and the
per-turn mirror ref (``retrace.git.mirrorTurns``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor, wait_until

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IDENTITY = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(cwd: Path, *args: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **IDENTITY}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def ref(cwd: Path, name: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", name], cwd=cwd, capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() or None


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "initial")
    return workspace


@pytest.fixture
async def mirrored(repo: Path, store: Path, session_model: FakeModel) -> AsyncIterator[EditorClient]:
    settings = {**AUTO, "git": {"mirrorTurns": True}}
    client = await start_editor(repo, store, env=model_env(session_model), settings=settings)
    yield client
    await stop_editor(client)


def owners(trace: dict[str, Any], path: str) -> dict[int, tuple[str, str]]:
    """line → (contributor type, checkpoint id) for one file of an Agent Trace record."""
    [f] = [f for f in trace["files"] if f["path"] == path]
    out: dict[int, tuple[str, str]] = {}
    for conv in f["conversations"]:
        [rel] = conv["related"]
        cp = rel["url"].removeprefix("retrace:checkpoint/")
        for r in conv["ranges"]:
            for line in range(r["start_line"], r["end_line"] + 1):
                out[line] = (conv["contributor"]["type"], cp)
    return out


async def test_export_attribution_and_mirror(mirrored: EditorClient, repo: Path) -> None:
    editor = mirrored
    first = await editor.run_turn("first task")
    sid = first["sessionId"]
    mirror = f"refs/heads/retrace/{sid}"
    await wait_until(lambda: ref(repo, mirror) is not None)
    after_first = ref(repo, mirror)
    assert git(repo, "show", f"{after_first}:src/app.py").count("return 2") == 1

    # The user appends a line between the turns: an external checkpoint at the next turn start.
    with (repo / "src" / "app.py").open("a") as f:
        f.write("# user line\n")
    await editor.run_turn("second task", session_id=sid)
    await wait_until(lambda: ref(repo, mirror) != after_first)
    after_second = ref(repo, mirror)
    assert git(repo, "rev-parse", f"{after_second}^").strip() == after_first
    assert "Sample (edited)" in git(repo, "show", f"{after_second}:README.md")

    # Export the head to a branch; the user's state is untouched.
    status_before = git(repo, "status", "--porcelain")
    index_before = (repo / ".git" / "index").read_bytes()
    head_before = (repo / ".git" / "HEAD").read_bytes()
    main_before = (repo / ".git" / "refs" / "heads" / "main").read_bytes()
    cps = [e["checkpoint"] for e in editor.events_of("checkpointCreated")]
    last = cps[-1]["id"]
    out = await editor.request("retrace/export/git", {"checkpointId": last, "branch": "retrace/handoff"})
    assert out["branch"] == "retrace/handoff" and ref(repo, "refs/heads/retrace/handoff") == out["commit"]
    assert git(repo, "show", f"{out['commit']}:src/app.py").endswith("# user line\n")
    assert git(repo, "log", "-1", "--format=%s", out["commit"]).strip() == "second task"
    again = await editor.request_error(
        "retrace/export/git", {"checkpointId": last, "branch": "retrace/handoff"}
    )
    assert "already exists" in again.message and again.data == {"code": "gitHandoff"}
    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert (repo / ".git" / "HEAD").read_bytes() == head_before
    assert (repo / ".git" / "refs" / "heads" / "main").read_bytes() == main_before

    # Attribution: the agent's edit is ai, the user's line human, the untouched lines unknown.
    trace = await editor.request("retrace/attribution", {})
    assert trace["version"] == "0.1.0" and trace["tool"]["name"] == "retrace"
    app = owners(trace, "src/app.py")
    lines = (repo / "src" / "app.py").read_text().splitlines()
    edit = next(c["id"] for c in cps if c["tool"] == "edit_file" and c["turnId"] == first["turnId"])
    assert app[lines.index("    return 2") + 1] == ("ai", edit)
    assert app[lines.index("# user line") + 1][0] == "human"
    assert app[1][0] == "unknown"
    assert {t for t, _ in owners(trace, "hello.txt").values()} == {"ai"}
    meta = trace["metadata"]["dev.retrace"]
    assert meta["checkpoints"][edit]["prompt"] == "first task"
    assert meta["checkpoints"][edit]["tool"] == "edit_file"
