"""Per-platform folders and the engine's explicit refusal where it cannot keep its promises.

* the default store folder comes from ``platformdirs`` (Linux: ``$XDG_DATA_HOME/retrace``,
  unchanged; macOS: ``~/Library/Application Support/retrace``; Windows: ``%LOCALAPPDATA%``), and
  the same workspace spelled with another letter case maps to one store where the file system
  ignores case (Windows);
* without descriptor-relative file operations (Windows) the engine refuses to open with one clear
  line, in process and through the real CLI, instead of failing inside a file operation.
"""

from __future__ import annotations

import ntpath
import os
import sys
from pathlib import Path

import platformdirs
import pytest

from retrace.engine import Engine, fsops
from retrace.engine.errors import RetraceError
from retrace.engine.store import layout
from retrace.engine.store.layout import default_store_dir

pytestmark = pytest.mark.slow


def test_default_store_dir_is_the_platforms_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "proj"
    ws.mkdir()
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    asked: list[tuple[object, ...]] = []

    def fake_user_data_dir(*args: object, **kwargs: object) -> str:
        asked.append((*args, *kwargs.items()))
        return str(tmp_path / "AppData" / "Local" / "retrace")

    monkeypatch.setattr(platformdirs, "user_data_dir", fake_user_data_dir)
    d = default_store_dir(ws)
    assert asked, "platformdirs decides the per-user folder"
    assert d.parent == tmp_path / "AppData" / "Local" / "retrace" / "stores"
    assert d.name.startswith("proj-")


def test_linux_default_is_unchanged_by_platformdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG layout is Linux's")
    ws = tmp_path / "proj"
    ws.mkdir()
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_dir(ws).parent == tmp_path / "xdg" / "retrace" / "stores"


def test_letter_case_of_the_workspace_does_not_split_the_store_on_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    upper, lower = tmp_path / "Proj", tmp_path / "proj"
    upper.mkdir()
    lower.mkdir()
    assert default_store_dir(upper) != default_store_dir(lower)  # case-sensitive Linux: two folders
    monkeypatch.setattr(layout.os.path, "normcase", ntpath.normcase)  # as on Windows
    assert default_store_dir(upper).name.lower() == default_store_dir(lower).name.lower()


def test_engine_without_dir_fd_opens_on_the_portable_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.delenv("RETRACE_FS_BACKEND", raising=False)
    assert fsops.choice() == "portable"
    eng = Engine.open(ws, tmp_path / "store")
    try:
        assert list(eng.head_manifest) == ["a.txt"]
    finally:
        eng.close()


def test_engine_refuses_clearly_when_posix_is_forced_without_dir_fd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setenv("RETRACE_FS_BACKEND", "posix")
    with pytest.raises(RetraceError, match=r"RETRACE_FS_BACKEND=posix needs .*openat"):
        Engine.open(ws, tmp_path / "store")
    assert not (tmp_path / "store").exists(), "nothing is written before the refusal"
