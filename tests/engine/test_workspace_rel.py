"""``workspace_rel`` with a per-call cache of resolved parents answers exactly what it answers
without one: the same relative paths, the same refusals (symlinked parents leading out, ``..``),
whatever the order of the paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrace.engine.errors import PathOutsideWorkspace
from retrace.engine.workspace import workspace_rel


def _answer(ws: str, path: str, real: dict[str, str] | None) -> str:
    try:
        return workspace_rel(ws, path, real)
    except PathOutsideWorkspace:
        return "<outside>"


def test_cached_resolution_equals_uncached(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg" / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "out").symlink_to(outside)  # a parent leading out of the workspace
    (ws / "alias").symlink_to(ws / "pkg")  # a parent leading back inside
    root = str(ws.resolve())
    paths = [
        "pkg/a.py",
        "pkg/sub/b.py",
        "alias/c.py",
        "alias/sub/d.py",
        "out/e.py",
        "pkg/../pkg/f.py",
        "../ws/pkg/g.py",
        "..",
        "..dots",
        os.path.join(root, "pkg", "h.py"),
        str(outside / "i.py"),
        "pkg/sub/../../j.py",
    ]
    expected = [_answer(root, p, None) for p in paths]
    assert expected[2] == "pkg/c.py" and expected[3] == "pkg/sub/d.py"
    assert expected[4] == "<outside>" and expected[7] == "<outside>" and expected[10] == "<outside>"
    assert expected[8] == "..dots"
    for order in (paths, paths[::-1], paths[1::2] + paths[::2]):
        real: dict[str, str] = {}
        got = {p: _answer(root, p, real) for p in order}
        assert got == dict(zip(paths, expected, strict=True))


def test_the_workspace_itself_is_not_a_path_in_it(tmp_path: Path) -> None:
    root = str(tmp_path.resolve())
    for p in (root, ".", ""):
        with pytest.raises(PathOutsideWorkspace):
            workspace_rel(root, p, {})
