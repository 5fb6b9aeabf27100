"""Hunk and one-file restores in another folder of a multi-root workspace, through the real server.

The safety property: an unsaved editor buffer of a file in folder 2 is never overwritten (the
restore is a conflict and writes nothing), whether the unsaved text differs from the disk or the
file is gone from the disk with only the editor's dirty flag saying the buffer holds work (the
dirty flag is matched by the file's own folder, :class:`retrace.engine.folders.FolderRouter`,
never by a path relative to the first folder). A clean hunk restore in folder 2 applies, records
a ``restore`` checkpoint in folder 2's store, is undone there, and leaves folder 1 byte-identical.

Real boundaries: the server process over stdio, the ``retrace`` command line in each folder
(relayed to the server holding that folder's store), the files on disk."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.lsp.lsp_support import (
    EditorClient,
    fake_model,
    start_editor,
    start_multiroot_agent,
    wait_until,
)
from tests.oracles import file_bytes

from retrace.app.hunks import text_hash

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")
MAIN = "package main\n\nfunc a() {}\n\nfunc b() {}\n"
EDITED = "package main\n\nfunc a() { one() }\n\nfunc b() { two() }\n"


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


def make(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp_path / "ws" / name
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).write_text(text, "utf-8")
    return root.resolve()


def checkpoint(env: dict[str, str], workspace: Path, label: str) -> str:
    cmd = [str(RETRACE), "checkpoint", "--label", label, "--json", "--workspace", str(workspace)]
    proc = cli_support.run(cmd, env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["id"])


def dirty_state(uri: str) -> dict[str, Any]:
    """The editor state the extension sends for one dirty editor outside the first folder (its
    ``path`` is relative to the first folder: none)."""
    editor = {
        "uri": uri,
        "path": None,
        "viewColumn": 1,
        "isActive": True,
        "isDirty": True,
        "selections": [],
        "visibleRanges": [],
    }
    return {"openEditors": [editor], "activeEditor": uri}


async def two_folders(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient], web_files: dict[str, str]
) -> tuple[EditorClient, Path, Path]:
    web = make(tmp_path, "web", web_files)
    api = make(tmp_path, "api", {"main.go": MAIN})
    editor = await start_editor(web, None, env=env, more_folders=(api,), init_options={"multiRoot": True})
    editors.append(editor)
    await editor.request("retrace/timeline/get", {"folder": str(api)})  # api is open
    return editor, web, api


async def test_hunk_restore_in_another_folder_refuses_unsaved_text_and_leaves_the_first_untouched(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    # The first folder has a file of the same name: nothing of it may be used or touched.
    editor, web, api = await two_folders(tmp_path, env, editors, {"main.go": MAIN})
    base = (await editor.request("retrace/timeline/get", {"folder": "api"}))["checkpoints"][0]["id"]
    (api / "main.go").write_text(EDITED, "utf-8")
    checkpoint(env, api, "agent edit")
    web_before = file_bytes(web)

    listed = await editor.request(
        "retrace/restore/hunks", {"checkpoint": base, "path": "main.go", "folder": "api"}
    )
    assert listed["currentHash"] == text_hash(EDITED)
    assert [h["baseText"] for h in listed["hunks"]] == ["func a() {}\n", "func b() {}\n"]
    # Folder 1's main.go is its own: no hunk there against api's checkpoint.
    await editor.request_error("retrace/restore/hunks", {"checkpoint": base, "path": "main.go"})

    # Unsaved typing in folder 2's buffer: the hunks are the buffer's, restoring one is refused.
    uri = editor.open_document(str(api / "main.go"))
    editor.type_in_document(uri, EDITED + "// unsaved\n")
    relisted = await editor.request(
        "retrace/restore/hunks", {"checkpoint": base, "path": "main.go", "folder": str(api)}
    )
    assert relisted["currentHash"] == text_hash(EDITED + "// unsaved\n")
    ask = {
        "checkpoint": base,
        "path": "main.go",
        "hunk": relisted["hunks"][0]["id"],
        "expectedHash": relisted["currentHash"],
        "folder": str(api),
    }
    error = await editor.request_error("retrace/restore/hunk", ask)
    assert "unsaved" in str(error)
    assert (api / "main.go").read_text("utf-8") == EDITED
    assert editor.documents[uri].text == EDITED + "// unsaved\n"

    # Saved (the buffer is the disk's text): the first hunk is put back, the second kept.
    editor.type_in_document(uri, EDITED)
    listed = await editor.request(
        "retrace/restore/hunks", {"checkpoint": base, "path": "main.go", "folder": "api"}
    )
    result = await editor.request(
        "retrace/restore/hunk",
        {**ask, "hunk": listed["hunks"][0]["id"], "expectedHash": listed["currentHash"]},
    )
    want = "package main\n\nfunc a() {}\n\nfunc b() { two() }\n"
    assert (api / "main.go").read_text("utf-8") == want
    assert file_bytes(web) == web_before  # the first folder is untouched
    restore_cp = result["checkpoint"]["id"]
    api_ids = [
        c["id"] for c in (await editor.request("retrace/timeline/get", {"folder": "api"}))["checkpoints"]
    ]
    assert restore_cp in api_ids
    web_ids = [c["id"] for c in (await editor.request("retrace/timeline/get", {}))["checkpoints"]]
    assert restore_cp not in web_ids
    await wait_until(lambda: any(c.get("folder") == str(api) for c in editor.timeline_changes))

    # Undo, in that folder only (the editor tells the server of the edit it applied, as VS Code does).
    assert editor.documents[uri].text == want
    editor.type_in_document(uri, want)
    undone = await editor.request("retrace/restore/undoLast", {"folder": str(api)})
    assert undone["outcome"]["kind"] == "applied", undone
    assert (api / "main.go").read_text("utf-8") == EDITED
    assert file_bytes(web) == web_before


async def test_file_restore_in_another_folder_keeps_a_dirty_buffer_of_a_deleted_file(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    editor, web, api = await two_folders(tmp_path, env, editors, {"README.md": "# web\n"})
    (api / "new.go").write_text("package main // v1\n", "utf-8")
    with_file = checkpoint(env, api, "new.go added")
    uri = editor.open_document(str(api / "new.go"))
    editor.type_in_document(uri, "my unsaved work\n")
    editor.notify("retrace/editor/didChangeState", dirty_state(uri))
    (api / "new.go").unlink()
    checkpoint(env, api, "new.go deleted")  # the head knows it is gone: only the buffer holds work
    web_before = file_bytes(web)

    result = await editor.request(
        "retrace/checkpoint/restore",
        {"id": with_file, "mode": "code", "paths": ["new.go"], "folder": str(api)},
    )
    assert result["outcome"]["kind"] == "conflict", result
    planned = [f for f in result["outcome"]["plan"]["files"] if f["action"] == "conflict"]
    assert [(f["path"], f["conflict"]["reason"]) for f in planned] == [("new.go", "unsaved")]
    assert not (api / "new.go").exists()
    assert editor.documents[uri].text == "my unsaved work\n"
    assert file_bytes(web) == web_before

    # The dirty flag of folder 2's file says nothing about folder 1's file of that name.
    (web / "new.go").write_text("web v1\n", "utf-8")
    web_cp = checkpoint(env, web, "web new.go")
    (web / "new.go").unlink()
    checkpoint(env, web, "web new.go deleted")
    restored = await editor.request(
        "retrace/checkpoint/restore", {"id": web_cp, "mode": "code", "paths": ["new.go"]}
    )
    assert restored["outcome"]["kind"] == "applied", restored
    assert (web / "new.go").read_text("utf-8") == "web v1\n"
    assert not (api / "new.go").exists()


async def test_restores_in_another_folder_wait_for_the_first_folders_running_turn(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    """The agent is the first folder's and writes in every folder: while its turn runs, a hunk or
    file restore in folder 2 is refused (it would race the agent's tools), nothing written."""
    web = make(tmp_path, "web", {"README.md": "# web\n"})
    api = make(tmp_path, "api", {"main.go": MAIN})
    model = fake_model("multiroot_busy")
    try:
        editor = await start_multiroot_agent(web, api, env, model)
        editors.append(editor)
        base = (await editor.request("retrace/timeline/get", {"folder": "api"}))["checkpoints"][0]["id"]
        (api / "main.go").write_text(EDITED, "utf-8")
        checkpoint(env, api, "edit")
        listed = await editor.request(
            "retrace/restore/hunks", {"checkpoint": base, "path": "main.go", "folder": "api"}
        )
        started = await editor.request("retrace/agent/prompt", {"text": "work in api"})
        await editor.wait_for_event(lambda e: e["kind"] == "toolCallStarted")
        hunk = {
            "checkpoint": base,
            "path": "main.go",
            "hunk": listed["hunks"][0]["id"],
            "expectedHash": listed["currentHash"],
            "folder": "api",
        }
        error = await editor.request_error("retrace/restore/hunk", hunk)
        assert "agent is running" in str(error)
        error = await editor.request_error(
            "retrace/checkpoint/restore", {"id": base, "mode": "code", "paths": ["main.go"], "folder": "api"}
        )
        assert "agent is running" in str(error)
        assert (api / "main.go").read_text("utf-8") == EDITED
        (api / "go").write_text("", "utf-8")  # the command ends
        await editor.wait_for_event(
            lambda e: e["kind"] == "turnFinished" and e.get("turnId") == started["turnId"]
        )
        assert (api / "busy.txt").read_text("utf-8") == "done\n"
        # The turn over, the same hunk restore applies (the file is as it was listed).
        await editor.request("retrace/restore/hunk", hunk)
        assert (api / "main.go").read_text("utf-8") == "package main\n\nfunc a() {}\n\nfunc b() { two() }\n"
    finally:
        model.stop()
