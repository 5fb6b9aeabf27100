"""Empty-directory pruning after a delete: one rule (``prune_empty_parents``) for both appliers."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from retrace.engine.workspace import prune_empty_parents
from retrace.lsp.services.editor_edit import prune_emptied_dirs

_names = st.sampled_from(["a", "b", "c"])
_paths = st.lists(st.lists(_names, min_size=1, max_size=4).map("/".join), min_size=1, max_size=6)


def _make(root: Path, files: list[str]) -> list[str]:
    made = []
    for rel in files:
        path = root / rel / "f.txt"
        if any(p.is_file() for p in [root / rel, *(root / rel).parents] if p != root):
            continue  # a prefix is already a file name here
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        made.append(f"{rel}/f.txt")
    return made


def _check(root: Path, deleted: str, before: set[str]) -> None:
    assert root.is_dir()
    after = {str(p.relative_to(root)) for p in root.rglob("*")}
    for gone in before - after:
        assert gone == deleted or (root / deleted).is_relative_to(root / gone)  # only its own parents
    parent = (root / deleted).parent
    if parent != root and parent.exists():
        assert any(parent.iterdir())  # what stays above a delete is not empty


@settings(max_examples=60, deadline=None)
@given(_paths, st.integers(0, 5), st.booleans())
def test_only_emptied_parents_go_and_never_the_root(files: list[str], pick: int, via_editor: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp)) / "ws"
        root.mkdir()
        made = _make(root, files)
        deleted = made[pick % len(made)]
        before = {str(p.relative_to(root)) for p in root.rglob("*")}
        (root / deleted).unlink()
        if via_editor:
            prune_emptied_dirs(root, [deleted])
        else:
            prune_empty_parents(str(root), str(root / deleted))
        _check(root, deleted, before)


def test_root_and_outside_are_never_removed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    assert prune_empty_parents(str(root), str(root / "gone.txt")) == []
    assert root.is_dir()
    outside = tmp_path / "other" / "x"
    outside.mkdir(parents=True)
    assert prune_empty_parents(str(root), str(outside / "f")) == []
    assert outside.is_dir()
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "keep").write_text("k")
    assert prune_empty_parents(str(root), str(root / "a" / "b" / "f")) == [str(root / "a" / "b")]
    assert (root / "a").is_dir()
