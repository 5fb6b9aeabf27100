"""Remote sync in a multi-root workspace, through the real server and a real S3 server: each
folder's store pushes under its own key prefix (``<workspaceName>`` for the first folder,
``<workspaceName>/<folder name>`` for the others), ``retrace/remote/*`` requests naming a
``folder`` reach that folder's remote, and a session another folder pushed is never opened into
this one (clear error, nothing written), even through a remote the command line pointed at the
other folder's prefix."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from tests.cli import cli_support
from tests.lsp.lsp_support import AUTO, EditorClient, start_editor
from tests.oracles import file_bytes
from tests.remote.s3server import S3Server, serving

from retrace.engine.store import home

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    with serving(tmp_path / "s3data") as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


def folder(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "ws" / name
    root.mkdir(parents=True)
    (root / f"{name}.txt").write_text(f"{name} one\n", "utf-8")
    return root.resolve()


def cli(env: dict[str, str], workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(workspace)]
    proc = cli_support.run(cmd, env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def checkpoint(env: dict[str, str], workspace: Path, label: str) -> None:
    proc = cli(env, workspace, "checkpoint", "--label", label, "--json")
    assert proc.returncode == 0, proc.stderr


async def sessions(editor: EditorClient, params: dict[str, Any]) -> set[tuple[str, str]]:
    """(session, store) of each listed session (the command line's session id is ``cli`` in
    every folder: a store tells them apart)."""
    listed = await editor.request("retrace/remote/sessions", params)
    return {(s["sessionId"], s["storeId"]) for s in listed["sessions"]}


async def test_each_folder_syncs_under_its_own_prefix_and_refuses_the_others_sessions(
    tmp_path: Path, s3: S3Server, env: dict[str, str], editors: list[EditorClient]
) -> None:
    web, api = folder(tmp_path, "web"), folder(tmp_path, "api")
    settings = {**AUTO, "remote": {"url": s3.url(), "endpoint": s3.endpoint, "workspaceName": "shared"}}
    editor = await start_editor(
        web, None, env=env, settings=settings, more_folders=(api,), init_options={"multiRoot": True}
    )
    editors.append(editor)
    await editor.request("retrace/timeline/get", {"folder": str(api)})  # api is open
    (web / "web.txt").write_text("web two\n", "utf-8")
    (api / "api.txt").write_text("api two\n", "utf-8")
    checkpoint(env, web, "web edit")
    checkpoint(env, api, "api edit")

    assert (await editor.request("retrace/remote/push", {}))["report"]["segments"] >= 1
    assert (await editor.request("retrace/remote/push", {"folder": str(api)}))["report"]["segments"] >= 1
    keys = list(s3.objects())
    api_keys = [k for k in keys if k.startswith("team/shared/api/")]
    web_keys = [k for k in keys if k.startswith("team/shared/") and k not in api_keys]
    assert any("/sessions/" in k for k in api_keys) and any("/sessions/" in k for k in web_keys), keys
    web_sessions = await sessions(editor, {})
    api_sessions = await sessions(editor, {"folder": "api"})
    assert web_sessions and api_sessions and not web_sessions & api_sessions
    status = await editor.request("retrace/remote/status", {"folder": str(api)})
    assert status["configured"] and status["status"]["lastPush"] is not None

    # The command line points a second remote of the api folder at the web folder's prefix.
    proc = cli(
        env, api, "remote", "add", "other", s3.url(), "--endpoint", s3.endpoint, "--workspace-name", "shared"
    )
    assert proc.returncode == 0, proc.stderr
    wrong = await sessions(editor, {"folder": str(api), "remote": "other"})
    assert web_sessions <= wrong
    victim, victim_store = next((sid, st) for sid, st in sorted(web_sessions) if sid != "cli")
    api_store = home.store_home(api)
    assert (api_store / "store.json").is_file()
    before = file_bytes(api)
    err = await editor.request_error(
        "retrace/remote/open",
        {"folder": str(api), "remote": "other", "sessionId": victim, "storeId": victim_store},
    )
    assert "not opened here" in str(err), err
    assert file_bytes(api) == before
    assert not (api_store / "sessions" / victim).exists()
    config = json.loads((api_store / "remote.json").read_text("utf-8"))
    assert {r["name"]: r.get("folder") for r in config["remotes"]} == {"origin": "api", "other": "api"}
    first = json.loads((home.store_home(web) / "remote.json").read_text("utf-8"))
    assert [(r["workspaceName"], r.get("folder")) for r in first["remotes"]] == [("shared", "web")]
    timeline = await editor.request("retrace/timeline/get", {"folder": str(api)})
    assert victim not in {c.get("sessionId") for c in timeline["checkpoints"]}


async def test_a_folder_added_later_gets_its_own_prefix_and_the_first_records_its_folder(
    tmp_path: Path, s3: S3Server, env: dict[str, str], editors: list[EditorClient]
) -> None:
    web, api = folder(tmp_path, "web"), folder(tmp_path, "api")
    settings = {**AUTO, "remote": {"url": s3.url(), "endpoint": s3.endpoint, "workspaceName": "shared"}}
    editor = await start_editor(web, None, env=env, settings=settings, init_options={"multiRoot": True})
    editors.append(editor)
    await editor.request("retrace/timeline/get", {})
    alone = json.loads((home.store_home(web) / "remote.json").read_text("utf-8"))
    assert [(r["workspaceName"], r.get("folder")) for r in alone["remotes"]] == [("shared", None)]

    editor.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=api.as_uri(), name="api")], removed=[]
            )
        )
    )
    for _ in range(200):
        try:
            await editor.request("retrace/remote/status", {"folder": str(api)})
            break
        except Exception:
            await asyncio.sleep(0.05)
    await editor.request("retrace/remote/push", {"folder": str(api)})
    assert any(k.startswith("team/shared/api/stores/") for k in s3.objects()), list(s3.objects())
    first = json.loads((home.store_home(web) / "remote.json").read_text("utf-8"))
    assert [(r["workspaceName"], r.get("folder")) for r in first["remotes"]] == [("shared", "web")]
    added = json.loads((home.store_home(api) / "remote.json").read_text("utf-8"))
    assert [(r["workspaceName"], r.get("folder")) for r in added["remotes"]] == [("shared/api", "api")]
