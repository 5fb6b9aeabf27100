"""``retrace`` in VS Code's integrated terminal: the extension sets ``RETRACE_WORKSPACE_FOLDERS``
(the window's folders) so a command run anywhere inside a folder works on that folder's store,
the one the timeline shows. The pure rule is table-tested; the real command crosses a real
subprocess with the variable set exactly as the extension sets it."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
from pathlib import Path

import pytest
from tests.cli import cli_support
from tests.cli.cli_support import RETRACE

from retrace.cli.folders import ENV, folder_for

SEP = ":"


@pytest.mark.parametrize(
    ("cwd", "folders", "expected"),
    [
        ("/w/proj", "/w/proj", "/w/proj"),
        ("/w/proj/src/deep", "/w/proj", "/w/proj"),
        ("/w/project", "/w/proj", None),  # a name prefix is not a parent
        ("/w", "/w/proj", None),  # above the folder
        ("/elsewhere", "/w/a:/w/b", None),
        ("/w/b/x", "/w/a:/w/b", "/w/b"),  # multi-root: the folder the terminal is in
        ("/w/a/inner/x", "/w/a:/w/a/inner", "/w/a/inner"),  # nested folders: the deepest
        ("/w/a/inner/x", "/w/a/inner:/w/a", "/w/a/inner"),
        ("/w/a", "", None),
        ("/w/a", "::", None),
        ("/w/a/x", "relative/a:/w/a", "/w/a"),  # a relative entry is no folder
        ("/w/a/x", "relative/a", None),
        ("/w/a/x", "/w/a/", "/w/a"),  # a trailing separator is the same folder
        ("/w/a/x", "/w/./a", "/w/a"),
        ("/", "/", "/"),
        ("/w/a/x", "/w/a\0evil", None),
    ],
)
def test_folder_for_picks_the_folder_holding_the_directory(
    cwd: str, folders: str, expected: str | None
) -> None:
    assert folder_for(cwd, folders, sep=SEP, path=posixpath) == expected


def test_folder_for_ignores_letter_case_where_the_platform_does() -> None:
    assert folder_for("/W/Proj/src", "/w/proj", sep=SEP, path=posixpath) is None
    assert folder_for("/W/Proj/src", "/w/proj", sep=SEP, path=posixpath, ignore_case=True) == "/w/proj"


def test_an_oversized_variable_is_ignored() -> None:
    huge = ":".join(f"/f{i}" for i in range(100_000)) + ":/w"
    assert folder_for("/w/x", huge, sep=SEP, path=posixpath) is None


# --- the real command -------------------------------------------------------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RETRACE_STORE", ENV)}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg-data")
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = cli_support.run([str(RETRACE), *args], env, cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for ws, name in ((a, "one"), (b, "two")):
        (ws / "src" / "deep").mkdir(parents=True)
        (ws / f"{name}.txt").write_text(f"{name}\n")
        _run(["init", "--workspace", str(ws)], tmp_path, _env(tmp_path))
        (ws / f"{name}.txt").write_text(f"{name} changed\n")
        _run(["checkpoint", "--workspace", str(ws), "--label", f"label {name}"], tmp_path, _env(tmp_path))
    return a, b


@pytest.mark.slow
def test_log_in_a_subfolder_of_a_terminal_folder_shows_that_folders_store(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    a, b = folders
    env = _env(tmp_path, **{ENV: os.pathsep.join([str(a), str(b)])})
    rows_b = json.loads(_run(["log", "--json"], b / "src" / "deep", env).stdout)
    assert [r.get("label") for r in rows_b] == ["baseline", "label two"]
    rows_a = json.loads(_run(["log", "--json"], a / "src", env).stdout)
    assert [r.get("label") for r in rows_a] == ["baseline", "label one"]
    # The same rows as naming the folder explicitly: one store per folder, THE home rule.
    assert rows_a == json.loads(_run(["log", "--json", "--workspace", str(a)], tmp_path, env).stdout)


@pytest.mark.slow
def test_outside_the_folders_and_with_an_explicit_workspace_nothing_changes(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    a, _b = folders
    env = _env(tmp_path, **{ENV: str(a)})
    # Without the variable, a subfolder is a workspace of its own: no store there.
    proc = _run(["log"], a / "src", _env(tmp_path), code=1)
    assert "no store" in proc.stderr.lower() or "retrace init" in proc.stderr
    # An explicit --workspace (even ".") wins over the terminal's folder.
    proc = _run(["log", "--workspace", "."], a / "src", env, code=1)
    assert proc.stderr.startswith("retrace: error: ")
    # Outside every folder: the current directory, as before.
    other = tmp_path / "other"
    other.mkdir()
    _run(["log"], other, env, code=1)


@pytest.mark.slow
def test_a_folder_named_through_a_symlink_is_the_same_folder(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    a, _b = folders
    link = tmp_path / "link-to-a"
    link.symlink_to(a, target_is_directory=True)
    env = _env(tmp_path, **{ENV: str(link)})
    rows = json.loads(_run(["log", "--json"], a / "src", env).stdout)
    assert [r.get("label") for r in rows] == ["baseline", "label one"]
