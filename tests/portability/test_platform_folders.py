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
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
from tests.portability.simulated_windows import PRELUDE

from retrace.engine import Engine
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


def test_engine_refuses_clearly_without_dir_fd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setattr(os, "supports_dir_fd", set())
    with pytest.raises(RetraceError, match=r"openat.*Linux and macOS"):
        Engine.open(ws, tmp_path / "store")
    assert not (tmp_path / "store").exists(), "nothing is written before the refusal"


def test_cli_on_simulated_windows_says_why_in_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    body = (
        "\nimport sys\nfrom retrace.cli.main import main\n"
        f"raise SystemExit(main(['init', '--workspace', {str(ws)!r}, '--store', {str(tmp_path / 's')!r}]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", PRELUDE + body], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrace: error:"), out.stderr
    assert "win32" in lines[0] and "Linux and macOS" in lines[0]
