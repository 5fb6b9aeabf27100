"""The editor applier never writes through a link (safety round 3, item 2): a restore applied
through the editor sends ``workspace/applyEdit`` changes only for paths whose every parent is a
real directory of the workspace and whose entry is a regular file or absent; anything else (a
path below a link, a link itself) goes to the one disk writer, which moves the link aside."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from lsprotocol import types as lsp
from pygls.uris import to_fs_path
from pygls.workspace.position_codec import PositionCodec

from retrace.engine import Engine, EngineConfig
from retrace.lsp.services.restore_editor import EditorApplier


class _Server:
    def __init__(self) -> None:
        self.workspace = SimpleNamespace(position_codec=PositionCodec(), text_documents={})

    @staticmethod
    def client_resource_operations() -> set[str]:
        return {"create", "rename", "delete"}


def _uris(change: Any) -> list[str]:
    if isinstance(change, lsp.TextDocumentEdit):
        return [change.text_document.uri]
    if isinstance(change, lsp.RenameFile):
        return [change.old_uri, change.new_uri]
    return [change.uri]


def _behind_link(ws: Path, path: Path) -> bool:
    rel = path.relative_to(ws)
    return any((ws / Path(*rel.parts[: i + 1])).is_symlink() for i in range(len(rel.parts)))


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_paths_below_a_link_go_to_the_disk_writer(tmp_path: Path, where: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    if where == "inside":
        outside = ws / "e"  # a link to another directory of the workspace: still a link
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "x.txt").write_text("x in a real directory\n")
    (ws / "ln").symlink_to("d/x.txt")
    (ws / "keep.txt").write_text("keep\n")
    eng = Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False))
    try:
        eng.checkpoint("A")
        target = eng.head.id
        (ws / "d" / "x.txt").unlink()
        (ws / "d").rmdir()
        (ws / "d").symlink_to(str(outside))  # the agent replaced the directory by a link
        (ws / "ln").unlink()
        (ws / "ln").write_text("a file where a link was\n")
        (ws / "keep.txt").write_text("keep, edited\n")
        eng.checkpoint("B")
        plan = eng.plan_restore(target, mode="code")
        service = EditorApplier(cast(Any, _Server()), cast(Any, SimpleNamespace(workspace=ws)))
        edit = service._edit_plan(eng, plan, {})
    finally:
        eng.close()
    through_editor = [Path(to_fs_path(u) or "") for c in edit.changes for u in _uris(c)]
    assert ws / "keep.txt" in through_editor  # a plain file still goes through the editor
    assert not [p for p in through_editor if _behind_link(ws, p)]
    on_disk = {op.path for op in edit.disk_ops}
    assert {"d/x.txt", "ln"} <= on_disk
    assert os.listdir(outside) == []
