"""Excludes and the size cap apply at once, in every folder of a multi-root workspace, through the
real server: a settings change (``workspace/didChangeConfiguration`` → the server pulls the
section) reaches every open folder's capture; the next checkpoint of each folder records what the
new rules change (a newly excluded file leaves the record, a file now under the cap is stored) as
part of that change, and nothing is reported as needing a restart."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.lsp.lsp_support import EditorClient, start_editor

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")
BIG = b"x" * 3000


@pytest.fixture
def env(tmp_path: Path, relay_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}


def folder(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "ws" / name
    (root / "gen").mkdir(parents=True)
    (root / "gen" / "out.txt").write_text("generated\n", "utf-8")
    (root / "big.bin").write_bytes(BIG)
    (root / "f.txt").write_text("0\n", "utf-8")
    return root.resolve()


def checkpoint(env: dict[str, str], root: Path, label: str) -> str:
    cmd = [str(RETRACE), "checkpoint", "--label", label, "--json", "--workspace", str(root)]
    proc = cli_support.run(cmd, env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["id"])


def scoped(params: dict[str, Any], root: Path | None) -> dict[str, Any]:
    return params if root is None else {**params, "folder": str(root)}


async def content(editor: EditorClient, root: Path | None, cp: str, path: str) -> dict[str, Any]:
    answer: dict[str, Any] = await editor.request(
        "retrace/checkpoint/fileContent", scoped({"id": cp, "path": path}, root)
    )
    return answer


async def files_of(editor: EditorClient, root: Path | None, cp: str) -> dict[str, str]:
    got = await editor.request("retrace/checkpoint/get", scoped({"id": cp}, root))
    return {f["path"]: f["status"] for f in got["checkpoint"]["files"]}


async def test_excludes_and_the_size_cap_apply_at_once_in_every_folder(
    tmp_path: Path, env: dict[str, str], editors: list[EditorClient]
) -> None:
    web, api = folder(tmp_path, "web"), folder(tmp_path, "api")
    settings: dict[str, Any] = {"excludes": [], "maxFileBytes": 1000}
    editor = await start_editor(
        web, None, env=env, settings=settings, more_folders=(api,), init_options={"multiRoot": True}
    )
    editors.append(editor)
    for root in (None, api):
        base = (await editor.request("retrace/timeline/get", scoped({}, root)))["checkpoints"][0]["id"]
        assert (await content(editor, root, base, "gen/out.txt"))["exists"] is True
        big = await content(editor, root, base, "big.bin")
        assert big["exists"] is True and big.get("unstored"), big  # over the cap: not stored

    update = await editor.request(
        "retrace/settings/update", {"settings": {"excludes": ["gen/"], "maxFileBytes": 10_000}}
    )
    assert update["restartRequired"] == []
    for root, path in ((web, None), (api, api)):
        (root / "f.txt").write_text("1\n", "utf-8")
        cp = checkpoint(env, root, "after the rules changed")
        files = await files_of(editor, path, cp)
        assert files.get("gen/out.txt") == "deleted", files  # no longer recorded
        assert "big.bin" in files, files  # now stored
        assert (await content(editor, path, cp, "gen/out.txt"))["exists"] is False
        big = await content(editor, path, cp, "big.bin")
        assert big["exists"] is True and not big.get("unstored"), big
        assert (root / "gen" / "out.txt").read_text("utf-8") == "generated\n"  # files stay

    # Once applied, an excluded file's changes are not recorded; the cap holds for new versions.
    (api / "gen" / "out.txt").write_text("again\n", "utf-8")
    (api / "f.txt").write_text("2\n", "utf-8")
    cp = checkpoint(env, api, "later")
    assert "gen/out.txt" not in await files_of(editor, api, cp)
