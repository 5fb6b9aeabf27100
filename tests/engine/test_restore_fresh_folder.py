"""Restoring into a folder that does not have the files yet (safety round 3, item 15): creating
a file where nothing exists loses nothing, so it needs no ``--force``; an existing file with
other content stays a conflict; deleting a file that is already gone is nothing to do."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine

Open = Callable[..., Engine]
FILES = {"README.md": "# project\n", "src/app.py": "print('hi')\n", "src/lib/util.py": "X = 1\n"}


def _checkpointed(ws: Path, open_engine: Open) -> tuple[Engine, str]:
    for rel, text in FILES.items():
        write(ws, rel, text)
    eng = open_engine()
    eng.checkpoint("agent work")
    return eng, eng.head.id


def _empty_folder(ws: Path) -> None:
    for child in ws.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def test_a_fresh_folder_restores_without_force(ws: Path, open_engine: Open) -> None:
    eng, target = _checkpointed(ws, open_engine)
    expected = entry_hashes(ws)
    eng.close()
    _empty_folder(ws)
    eng = open_engine()  # the catch-up capture records the files' absence as an outside change
    out = eng.restore(target)
    assert out.kind == "applied", out
    assert entry_hashes(ws) == expected


def test_an_existing_different_file_stays_a_conflict(ws: Path, open_engine: Open) -> None:
    eng, target = _checkpointed(ws, open_engine)
    eng.close()
    _empty_folder(ws)
    write(ws, "src/app.py", "print('somebody else')\n")
    eng = open_engine()
    out = eng.restore(target)
    assert out.kind == "conflict", out
    assert [f.path for f in out.files] == ["src/app.py"]
    assert (ws / "src" / "app.py").read_text() == "print('somebody else')\n"
    assert not (ws / "README.md").exists()  # a conflict applies nothing


def test_an_unrecorded_delete_is_undone_without_force(ws: Path, open_engine: Open) -> None:
    eng, target = _checkpointed(ws, open_engine)
    write(ws, "src/app.py", "print('agent v2')\n")
    eng.checkpoint("agent edit")
    (ws / "src" / "app.py").unlink()  # nobody recorded this
    out = eng.restore(target)
    assert out.kind == "applied", out
    assert (ws / "src" / "app.py").read_text() == FILES["src/app.py"]


def test_deleting_what_is_already_gone_is_nothing_to_do(ws: Path, open_engine: Open) -> None:
    eng, target = _checkpointed(ws, open_engine)
    write(ws, "extra.txt", "added later\n")
    eng.checkpoint("agent adds a file")
    (ws / "extra.txt").unlink()  # gone before the restore, unrecorded
    out = eng.restore(target, dry_run=True)
    assert "extra.txt" not in [pf.path for pf in out.plan.files]
