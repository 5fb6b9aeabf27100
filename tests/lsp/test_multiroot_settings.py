"""Settings reach every folder of a multi-root workspace, through the real server: a retention
change is applied at once to every open folder's engine (each store collected when the new quota
makes a cleanup due), not only to the first folder's; a folder opened later is opened with the
settings current then."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from tests.cli import cli_support
from tests.lsp.lsp_support import AUTO, EditorClient, start_editor

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


def folder(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "ws" / name
    root.mkdir(parents=True)
    (root / "f.txt").write_text("0\n", "utf-8")
    return root.resolve()


def run(env: dict[str, str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), *args, "--workspace", str(root)]
    return cli_support.run(cmd, env, timeout=120)


def checkpoints(env: dict[str, str], root: Path, n: int) -> None:
    for i in range(n):
        (root / "f.txt").write_text(f"{i + 1}\n", "utf-8")
        proc = run(env, root, "checkpoint", "--label", f"c{i}")
        assert proc.returncode == 0, proc.stderr


async def poll(condition: Callable[[], Awaitable[bool]], limit_s: float = 60.0) -> None:
    for _ in range(int(limit_s / 0.2)):
        if await condition():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"condition not reached in time: {COUNTS}")


COUNTS: dict[str, int] = {}
"""The last count seen per folder (said when a wait fails)."""


async def count(editor: EditorClient, root: Path | None) -> int:
    params = {} if root is None else {"folder": str(root)}
    COUNTS[str(root)] = n = int((await editor.request("retrace/stats", params))["store"]["checkpoints"])
    return n


async def test_a_retention_change_reaches_every_folder(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    web, api, docs = folder(tmp_path, "web"), folder(tmp_path, "api"), folder(tmp_path, "docs")
    editor = await start_editor(
        web, None, env=env, settings=dict(AUTO), more_folders=(api,), init_options={"multiRoot": True}
    )
    editors.append(editor)
    await count(editor, api)  # api is open
    checkpoints(env, web, 4)
    checkpoints(env, api, 4)
    web_before, api_before = await count(editor, None), await count(editor, api)
    assert web_before >= 5 and api_before >= 5

    # (A ``retrace checkpoint`` is a bookmark, which retention keeps: the unnamed ones go.)
    editor.change_settings({**AUTO, "retention": {"maxCheckpoints": 2}})

    async def collected() -> bool:
        return await count(editor, None) < web_before and await count(editor, api) < api_before

    await poll(collected)
    # A folder added now opens with the current settings: its own cleanup keeps it within them.
    # No server holds it yet: the command line's cold path.
    assert run(env, docs, "init").returncode == 0
    checkpoints(env, docs, 4)
    docs_before = json.loads(run(env, docs, "stats", "--json").stdout)["checkpoints"]
    assert docs_before >= 5
    editor.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=docs.as_uri(), name="docs")], removed=[]
            )
        )
    )

    async def docs_collected() -> bool:
        try:
            return await count(editor, docs) < docs_before
        except Exception:
            return False  # still opening

    await poll(docs_collected)
