"""A multi-root workspace through the real server: every folder its own store, baseline and
relay; requests naming a ``folder`` reach that folder's engine; a restore in one folder leaves the
other byte-identical; folders added and removed while the server runs; a client that does not
declare ``multiRoot`` gets exactly the single-folder server of before (first folder only).

Real boundaries: the server process over stdio, the ``retrace`` command line in each folder
(relayed to the server holding that folder's store), the files on disk. Every test has its own
user data dir (``XDG_DATA_HOME``) and no ``$RETRACE_STORE``: each folder's default store."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from tests.cli import cli_support
from tests.lsp.lsp_support import (
    AUTO,
    EditorClient,
    fake_model,
    model_env,
    start_editor,
    start_multiroot_agent,
    wait_until,
)
from tests.oracles import file_bytes
from tests.remote.s3server import serving

from retrace.engine.store import home
from retrace.relay import wire

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


@pytest.fixture
def web(tmp_path: Path) -> Path:
    root = tmp_path / "ws" / "web"
    (root / "src").mkdir(parents=True)
    (root / "src" / "index.ts").write_text("export const a = 1;\n", "utf-8")
    (root / "README.md").write_text("# web\n", "utf-8")
    return root.resolve()


@pytest.fixture
def api(tmp_path: Path) -> Path:
    root = tmp_path / "ws" / "api"
    root.mkdir(parents=True)
    (root / "main.go").write_text("package main\n", "utf-8")
    (root / "notes.txt").write_bytes(b"one\r\ntwo\r\n")
    return root.resolve()


def cli(env: dict[str, str], workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(workspace)]
    proc = cli_support.run(cmd, env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def checkpoint(env: dict[str, str], workspace: Path, label: str) -> str:
    proc = cli(env, workspace, "checkpoint", "--label", label, "--json")
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["id"])


async def timeline(editor: EditorClient, folder: Path | None) -> dict[str, Any]:
    params: dict[str, Any] = {} if folder is None else {"folder": str(folder)}
    return dict(await editor.request("retrace/timeline/get", params))


async def two_folders(web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]) -> EditorClient:
    editor = await start_editor(web, None, env=env, more_folders=(api,), init_options={"multiRoot": True})
    editors.append(editor)
    return editor


async def test_restore_in_one_folder_leaves_the_other_byte_identical(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    editor = await two_folders(web, api, env, editors)
    web_base = (await timeline(editor, None))["checkpoints"][0]["id"]
    api_base = (await timeline(editor, api))["checkpoints"][0]["id"]
    assert web_base != api_base
    # Each folder's own default store, as a single folder gets it.
    assert (home.store_home(web) / "store.json").is_file()
    assert (home.store_home(api) / "store.json").is_file()

    (web / "src" / "index.ts").write_text("export const a = 2;\n", "utf-8")
    (api / "main.go").write_text("package main\n\nfunc main() {}\n", "utf-8")
    (api / "new.go").write_text("package main\n", "utf-8")
    web_cp = checkpoint(env, web, "web edit")  # relayed to the server, which holds the store
    api_cp = checkpoint(env, api, "api edit")
    assert web_cp in [c["id"] for c in (await timeline(editor, web))["checkpoints"]]
    assert api_cp in [c["id"] for c in (await timeline(editor, api))["checkpoints"]]
    assert api_cp not in [c["id"] for c in (await timeline(editor, None))["checkpoints"]]

    web_before, api_head = file_bytes(web), file_bytes(api)
    result = await editor.request(
        "retrace/checkpoint/restore", {"id": api_base, "mode": "code", "folder": str(api)}
    )
    assert result["outcome"]["kind"] == "applied", result
    assert file_bytes(web) == web_before  # the key property: the other folder is untouched
    assert (api / "main.go").read_text("utf-8") == "package main\n"
    assert not (api / "new.go").exists()
    assert file_bytes(api) != api_head
    # The timeline change names its folder; the primary's head did not move.
    await wait_until(lambda: any(c.get("folder") == str(api) for c in editor.timeline_changes))
    assert (await timeline(editor, None))["head"] == web_cp

    # Diff and file content per folder: the api restore shows in api, not in web.
    diff = await editor.request("retrace/checkpoint/diff", {"from": api_cp, "to": api_base, "folder": "api"})
    assert {f["path"] for f in diff["files"]} == {"main.go", "new.go"}
    # File history per folder: api's main.go has api's versions; web has no such file.
    history = await editor.request("retrace/file/history", {"path": "main.go", "folder": str(api)})
    assert api_cp in [v["checkpointId"] for v in history["versions"]]
    assert (await editor.request("retrace/file/history", {"path": "main.go"}))["versions"] == []
    # Undo the restore, in that folder only.
    undone = await editor.request("retrace/restore/undoLast", {"folder": str(api)})
    assert undone, undone
    assert (api / "new.go").exists()
    assert file_bytes(web) == web_before


async def test_unknown_folder_and_unrouted_methods_are_refused(
    web: Path, api: Path, tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    editor = await two_folders(web, api, env, editors)
    await timeline(editor, api)
    error = await editor.request_error("retrace/timeline/get", {"folder": str(tmp_path / "elsewhere")})
    assert "not a folder of this workspace" in error.message
    error = await editor.request_error("retrace/timeline/get", {"folder": 7})
    assert "folder" in error.message
    error = await editor.request_error("retrace/agent/prompt", {"text": "hi", "folder": str(api)})
    assert "only in the first folder" in error.message
    base = (await timeline(editor, api))["checkpoints"][0]["id"]
    for mode in ("conversation", "both"):
        error = await editor.request_error(
            "retrace/checkpoint/restore", {"id": base, "mode": mode, "folder": "api"}
        )
        assert "restores code only" in error.message
    # Naming the first folder is the same as naming none.
    assert (await timeline(editor, web))["head"] == (await timeline(editor, None))["head"]


async def test_folders_added_and_removed_while_running(
    web: Path, api: Path, tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    editor = await two_folders(web, api, env, editors)
    await timeline(editor, api)
    extra = tmp_path / "ws" / "docs"
    extra.mkdir()
    (extra / "a.md").write_text("a\n", "utf-8")
    extra = extra.resolve()
    editor.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=extra.as_uri(), name="docs")],
                removed=[lsp.WorkspaceFolder(uri=api.as_uri(), name="api")],
            )
        )
    )
    assert len((await timeline(editor, extra))["checkpoints"]) == 1
    error = await editor.request_error("retrace/timeline/get", {"folder": str(api)})
    assert "not a folder of this workspace" in error.message
    # The removed folder's store is free again: the command line opens it itself.
    proc = cli(env, api, "log", "--json")
    assert proc.returncode == 0, proc.stderr
    # Removing the first folder keeps it served (its agent may be running): logged, not closed.
    editor.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[], removed=[lsp.WorkspaceFolder(uri=web.as_uri(), name="web")]
            )
        )
    )
    assert (await timeline(editor, None))["checkpoints"]


async def test_without_multi_root_only_the_first_folder_is_opened(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    editor = await start_editor(web, None, env=env, more_folders=(api,))
    editors.append(editor)
    assert (await timeline(editor, None))["checkpoints"]
    error = await editor.request_error("retrace/timeline/get", {"folder": str(api)})
    assert "not a folder of this workspace" in error.message
    assert not home.store_home(api).exists()


async def test_agent_edits_in_two_folders_each_folder_checkpoints_and_restores_alone(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """The "Done when" property through the real server and the fake model: one turn writes in
    both folders; each folder's store records the calls that wrote there (the first folder's
    timeline keeps one row per tool call, naming the other folder's checkpoint); a restore of
    either folder leaves the other byte-identical."""
    model = fake_model("multiroot")
    try:
        editor = await start_multiroot_agent(web, api, env, model)
        editors.append(editor)
        web_base = (await timeline(editor, None))["checkpoints"][0]["id"]
        assert len((await timeline(editor, api))["checkpoints"]) == 1  # its baseline, opened
        (api / "user.txt").write_text("the user's own edit\n", "utf-8")  # before the turn: not agent work
        turn = await editor.run_turn("edit both")
        finished = editor.events_of("toolCallFinished", turn["turnId"])
        assert [e["status"] for e in finished] == ["ok"] * 5, finished
        assert (api / "new.go").read_text("utf-8") == "package main\n"
        assert (api / "main.go").read_text("utf-8") == "package server\n"
        assert (web / "src" / "index.ts").read_text("utf-8") == "export const a = 2;\n"
        assert not (web / "api").exists()  # "api/…" named the folder, not a directory of web

        web_cps = [c for c in (await timeline(editor, None))["checkpoints"] if c["kind"] == "tool"]
        api_cps = [c for c in (await timeline(editor, api))["checkpoints"] if c["kind"] == "tool"]
        assert [c["tool"] for c in web_cps] == [
            "write_file",
            "edit_file",
            "edit_file",
            "read_file",
            "run_command",
        ]
        assert [c["tool"] for c in api_cps] == ["write_file", "edit_file", "run_command"]
        assert {f["path"] for c in api_cps for f in c["files"]} == {"new.go", "main.go", "cmd.txt"}
        api_all = (await timeline(editor, api))["checkpoints"]
        [api_before_agent] = [c for c in api_all if c["kind"] == "external"]
        assert [f["path"] for f in api_before_agent["files"]] == ["user.txt"]
        assert web_cps[4]["meta"]["folders"] == {str(api): api_cps[2]["id"]}  # a command's effects
        assert (api / "cmd.txt").read_bytes() == b"c\n"
        assert {f["path"] for c in web_cps for f in c["files"]} == {"src/index.ts"}
        assert web_cps[0]["meta"]["folders"] == {str(api): api_cps[0]["id"]}
        assert web_cps[0]["toolCallId"] == api_cps[0]["toolCallId"]
        # The first folder's row of that call says where its change went.
        stories = (await editor.request("retrace/timeline/tree", {}))["sessions"]
        rows = {r["checkpoint"]["id"]: r for s in stories for i in s["items"] for r in (i.get("rows") or [i])}
        assert rows[web_cps[0]["id"]]["summary"] == "changes in api"
        assert rows[web_cps[4]["id"]]["summary"] == "changes in api"
        await wait_until(lambda: any(c.get("folder") == str(api) for c in editor.timeline_changes))

        web_now, api_now = file_bytes(web), file_bytes(api)
        restored = await editor.request(
            "retrace/checkpoint/restore", {"id": api_before_agent["id"], "mode": "code", "folder": str(api)}
        )
        assert restored["outcome"]["kind"] == "applied", restored
        assert file_bytes(web) == web_now
        assert (api / "main.go").read_text("utf-8") == "package main\n" and not (api / "new.go").exists()
        assert not (api / "cmd.txt").exists()
        assert (api / "user.txt").exists()  # the user's own edit is kept
        api_restored = file_bytes(api)
        restored = await editor.request("retrace/checkpoint/restore", {"id": web_base, "mode": "code"})
        assert restored["outcome"]["kind"] == "applied", restored
        assert file_bytes(api) == api_restored
        assert (web / "src" / "index.ts").read_text("utf-8") == "export const a = 1;\n"
        assert api_now != api_restored

        # A path that leaves its folder is refused; a search and a command (cwd) reach another folder.
        turn = await editor.run_turn("go outside")
        finished = editor.events_of("toolCallFinished", turn["turnId"])
        assert [e["status"] for e in finished] == ["error", "ok", "ok"], finished
        assert not (web / "escape.txt").exists()
        assert (api / "from-cwd.txt").read_text("utf-8") == "here\n"
        assert not (web / "from-cwd.txt").exists()
        # The command's effect is checkpointed in api's own store (detected there).
        history = await editor.request("retrace/file/history", {"path": "from-cwd.txt", "folder": str(api)})
        assert history["versions"], history
    finally:
        model.stop()


async def test_a_folder_inside_another_is_not_opened_twice(
    web: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """Nested folders: two stores would both record (and restore) the inner folder's files, so
    the inner one stays the outer folder's; its own store is never made."""
    inner = web / "src"
    editor = await start_editor(web, None, env=env, more_folders=(inner,), init_options={"multiRoot": True})
    editors.append(editor)
    assert (await timeline(editor, None))["checkpoints"]
    error = await editor.request_error("retrace/timeline/get", {"folder": str(inner)})
    assert "not a folder of this workspace" in error.message
    assert not home.store_home(inner).exists()
    assert any("overlaps" in m.message for m in editor.client.log_messages)


def hook(env: dict[str, str], workspace: Path, event: dict[str, Any]) -> None:
    """``retrace hook claude-code`` as Claude Code runs it in ``workspace`` (no store named)."""
    cmd = [str(RETRACE), "hook", "claude-code", "--workspace", str(workspace)]
    proc = cli_support.run(cmd, env, input=json.dumps(event).encode(), timeout=60)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


async def test_another_agents_hooks_in_another_folder_reach_its_store_through_its_relay(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """Claude Code working in the second folder: its calls land in that folder's store (the
    server holds it and relays); the editor hears a timeline change naming the folder and no
    agent event (the chat is the first folder's)."""
    editor = await two_folders(web, api, env, editors)
    await timeline(editor, api)
    base = {"session_id": "s-api", "transcript_path": "/tmp/t.jsonl", "cwd": str(api)}
    target = api / "hooked.go"
    write = {"tool_name": "Write", "tool_input": {"file_path": str(target), "content": "package main\n"}}
    hook(env, api, {**base, "hook_event_name": "UserPromptSubmit", "prompt": "add a file"})
    hook(env, api, {**base, "hook_event_name": "PreToolUse", **write, "tool_use_id": "toolu_a1"})
    target.write_text("package main\n", "utf-8")
    hook(env, api, {**base, "hook_event_name": "PostToolUse", **write, "tool_use_id": "toolu_a1"})
    hook(env, api, {**base, "hook_event_name": "Stop"})
    tools = [c for c in (await timeline(editor, api))["checkpoints"] if c["kind"] == "tool"]
    assert [(c["tool"], c["toolCallId"]) for c in tools] == [("Write", "toolu_a1")]
    assert [c for c in (await timeline(editor, None))["checkpoints"] if c["kind"] == "tool"] == []
    await wait_until(lambda: any(c.get("folder") == str(api) for c in editor.timeline_changes))
    assert all(c.get("folder") == str(api) for c in editor.timeline_changes if c.get("checkpoint"))
    assert not [e for e in editor.events if e.get("sessionId") == "claude-code-s-api"]


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60, check=True
    )
    return proc.stdout


async def test_export_to_git_in_another_folder_uses_that_folders_repository(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    git(api, "init", "-q", "-b", "main")
    git(api, "add", "-A")
    git(api, "commit", "-q", "-m", "start")
    editor = await two_folders(web, api, env, editors)
    await timeline(editor, api)
    (api / "main.go").write_text("package main\n\nfunc main() {}\n", "utf-8")
    api_cp = checkpoint(env, api, "api edit")
    result = await editor.request(
        "retrace/export/git", {"checkpointId": api_cp, "branch": "retrace/api-edit", "folder": str(api)}
    )
    assert result["branch"] == "retrace/api-edit"
    assert "func main" in git(api, "show", "retrace/api-edit:main.go")
    assert git(api, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # the user's branch unmoved
    assert not (web / ".git").exists()


async def test_one_folder_with_multi_root_declared_is_the_one_folder_agent(
    web: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """The extension always declares ``multiRoot``: with one folder open, ``api/…`` is a directory
    of that folder, exactly as before (the regression guard of the agent's paths)."""
    model = fake_model("multiroot")
    try:
        editor = await start_editor(
            web, None, env={**env, **model_env(model)}, settings=AUTO, init_options={"multiRoot": True}
        )
        editors.append(editor)
        turn = await editor.run_turn("edit both")
        statuses = [e["status"] for e in editor.events_of("toolCallFinished", turn["turnId"])]
        # No api/main.go nor api/notes.txt in this folder; ../api does not exist for the command.
        assert statuses == ["ok", "ok", "error", "error", "error"], statuses
        assert (web / "api" / "new.go").read_text("utf-8") == "package main\n"
        cps = [c for c in (await timeline(editor, None))["checkpoints"] if c["kind"] == "tool"]
        assert all("folders" not in (c.get("meta") or {}) for c in cps)
    finally:
        model.stop()


async def test_a_subagent_works_in_the_first_folder_and_never_writes_another_folders_name_there(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """A subagent's copy is the first folder's: its write in that copy is merged; its write under
    the other folder's name (``api/kid.go``) is refused with the reason, creating neither a stray
    ``api/`` directory in the first folder nor anything in ``api``."""
    model = fake_model("multiroot_task")
    try:
        editor = await start_multiroot_agent(web, api, env, model)
        editors.append(editor)
        api_before = file_bytes(api)
        turn = await editor.run_turn("delegate")
        events = editor.events_of("toolCallFinished", turn["turnId"])
        [finished] = [e for e in events if e.get("tool") == "task"]
        assert (web / "src" / "kid.ts").read_text("utf-8") == "export const kid = 1;\n"
        assert not (web / "api").exists()
        assert file_bytes(api) == api_before
        output = json.dumps(finished)
        assert "api/kid.go" in output and "cannot reach" in output, output
    finally:
        model.stop()


async def test_naming_a_row_of_another_folder_names_it_in_that_folders_store(
    web: Path, api: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """The grouped Timeline's "Bookmark This Checkpoint" on a row of another folder."""
    editor = await two_folders(web, api, env, editors)
    api_base = (await timeline(editor, api))["checkpoints"][0]["id"]
    named = await editor.request(
        "retrace/bookmark/name", {"checkpointId": api_base, "name": "api start", "folder": str(api)}
    )
    assert named["name"] == "api start"
    assert {"checkpointId": api_base, "name": "api start"} in (await timeline(editor, api))["bookmarks"]
    assert (await timeline(editor, None))["bookmarks"] == []
    # Unknown in the first folder's store: refused there, nothing named.
    error = await editor.request_error("retrace/bookmark/name", {"checkpointId": api_base, "name": "x"})
    assert error.message
    # Creating a bookmark of the current state stays the first folder's (its agent decides when).
    error = await editor.request_error("retrace/bookmark/create", {"name": "x", "folder": str(api)})
    assert "only in the first folder" in error.message


async def test_removing_a_folder_stops_its_relay_and_its_remote(
    web: Path, api: Path, tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """A removed folder's features stop, in order, before its engine closes: its relay's socket
    is gone (the command line then opens the store itself) and its remote stopped after pushing
    what was pending (a checkpoint made after its start push reaches the bucket)."""
    with serving(tmp_path / "s3data") as s3:
        env = {**env, **s3.env()}
        settings = {**AUTO, "remote": {"url": s3.url(), "endpoint": s3.endpoint, "workspaceName": "shared"}}
        editor = await start_editor(
            web, None, env=env, settings=settings, more_folders=(api,), init_options={"multiRoot": True}
        )
        editors.append(editor)
        await timeline(editor, api)
        socket = wire.socket_path(home.store_home(api))
        assert socket.exists()  # the api folder's relay listens

        async def api_pushed() -> bool:
            status = await editor.request("retrace/remote/status", {"folder": str(api)})
            return bool(status["configured"] and status["status"]["lastPush"] is not None)

        for _ in range(600):  # the remote's start push (what the open left) has run
            if await api_pushed():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the api folder's remote never pushed")
        (api / "main.go").write_text("package main\n\nfunc later() {}\n", "utf-8")
        label = checkpoint(env, api, "after the start push")  # relayed: the server records it

        def segments() -> list[str]:
            return [k for k in s3.objects() if k.startswith("team/shared/api/sessions/")]

        pending = segments()

        editor.client.workspace_did_change_workspace_folders(
            lsp.DidChangeWorkspaceFoldersParams(
                event=lsp.WorkspaceFoldersChangeEvent(
                    added=[], removed=[lsp.WorkspaceFolder(uri=api.as_uri(), name="api")]
                )
            )
        )
        await wait_until(lambda: not socket.exists())
        # Its remote stopped by pushing what was pending: the relayed checkpoint's segment.
        await wait_until(lambda: len(segments()) > len(pending))
        # The store is free: the command line opens it itself and sees the relayed checkpoint.
        for _ in range(60):
            logged = cli(env, api, "log", "--json")
            if logged.returncode == 0:
                break
            await asyncio.sleep(0.5)
        assert logged.returncode == 0, logged.stderr
        assert label in [c["id"] for c in json.loads(logged.stdout)]
        # The first folder's relay still listens.
        assert wire.socket_path(home.store_home(web)).exists()
