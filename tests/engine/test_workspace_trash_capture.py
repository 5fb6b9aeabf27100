"""A restore's workspace-side trash (``.rt-<8 hex>.trash`` at the root, kept only after an
incomplete rollback, :mod:`retrace.engine.restore.disk`) holds the user's own files: no capture may
record it as workspace content, while a user file that merely looks alike is captured."""

from pathlib import Path

from retrace.engine import Engine


def test_a_kept_workspace_trash_is_never_captured(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        trash = ws / ".rt-0123abcd.trash"
        trash.mkdir()
        (trash / "0").write_text("user\n")
        (ws / ".rt-0123abcd.txt").write_text("a user file with a lookalike name\n")
        (ws / "sub").mkdir()
        (ws / "sub" / ".rt-0123abcd.trash").write_text("not at the root: the user's\n")
        eng.checkpoint("after")
        paths = set(eng.head_manifest)
    assert ".rt-0123abcd.trash/0" not in paths
    assert {"a.txt", ".rt-0123abcd.txt", "sub/.rt-0123abcd.trash"} <= paths
