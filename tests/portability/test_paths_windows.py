"""``normalize_rel`` under Windows rules (``windows=True``), checked on any machine.

Windows adds ways to leave a folder or alias a file that POSIX lacks: backslashes, drive letters
(``C:\\x`` and the drive-relative ``C:x``), UNC paths (``\\\\server\\share``), a rooted ``\\x``, reserved
device names (``CON``, ``nul.txt``, ``COM1``), names Windows silently changes (a trailing dot or
space) and ``:`` (alternate data streams: ``a.txt:hidden``). The property test draws paths from an
alphabet rich in those and checks the contract on every accepted result; the examples pin the
individual refusals and the accepted absolute forms under a root.
"""

from __future__ import annotations

import ntpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrace.engine import workspace as workspace_module
from retrace.engine.workspace import EscapeError, normalize_rel, windows_name_problem

ROOT = r"C:\Users\Ann\proj"
_PIECES = st.sampled_from(
    ["a", "B", "src", ".", "..", "", " ", "C:", "c:", "\\", "/", "\\\\", "//", ":", "con", "NUL.txt",
     "x.", "y ", "COM1", "lpt9.md", "?", "*", "<", "|", '"', "proj", "Users", "Ann", "\x01"]
)  # fmt: skip


def _contract(rel: str) -> None:
    parts = rel.split("/")
    assert rel and "\\" not in rel and ":" not in rel
    assert all(p not in ("", ".", "..") for p in parts)
    assert all(windows_name_problem(p) is None for p in parts)
    full = ntpath.normpath(ntpath.join(ROOT, rel.replace("/", "\\")))
    assert ntpath.normcase(full).startswith(ntpath.normcase(ROOT) + "\\")


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=8).map("".join))
def test_accepted_paths_stay_inside_and_are_plain_names(text: str) -> None:
    for root in (None, ROOT):
        try:
            rel = normalize_rel(text, root, windows=True)
        except EscapeError:
            continue
        _contract(rel)


@pytest.mark.parametrize(
    "path",
    [
        r"C:\Windows\system32",  # absolute elsewhere
        r"D:\proj\a.txt",  # another drive
        r"C:a.txt",  # relative to drive C's current folder, not to the workspace
        r"\a.txt",  # root of the current drive
        r"\\server\share\a.txt",  # UNC
        "//server/share/a.txt",
        r"src\..\..\x",
        "CON",
        "src/nul.txt",
        "Com1",
        "LPT9.log",
        "COM0",  # 0 is reserved too (Microsoft's naming rules list COM0–COM9, LPT0–LPT9)
        "lpt0.txt",
        "conin$",
        "src/CONOUT$.log",
        "COM\u00b9",  # superscript one
        "a.txt:secret",  # alternate data stream
        "x.",  # Windows drops the dot: aliases "x"
        "x ",
        "a|b",
        "a?",
    ],
)
def test_windows_refusals(path: str) -> None:
    with pytest.raises(EscapeError):
        normalize_rel(path, ROOT, windows=True)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (r"src\app.py", "src/app.py"),
        ("src/app.py", "src/app.py"),
        (r"C:\Users\Ann\proj\src\app.py", "src/app.py"),
        (r"c:\users\ann\PROJ\src\app.py", "src/app.py"),  # drive and folders ignore case
        ("C:/Users/Ann/proj/a.txt", "a.txt"),
        (r".\src\.\x.py", "src/x.py"),
        ("console.log", "console.log"),  # only the exact device names are reserved
        ("CONFIG", "CONFIG"),
    ],
)
def test_windows_accepted(path: str, expected: str) -> None:
    assert normalize_rel(path, ROOT, windows=True) == expected


def test_unc_workspace_root() -> None:
    root = r"\\server\share\proj"
    assert normalize_rel(r"\\server\share\proj\a\b.txt", root, windows=True) == "a/b.txt"
    with pytest.raises(EscapeError):
        normalize_rel(r"\\server\share\other\b.txt", root, windows=True)


def test_posix_keeps_its_rules() -> None:
    """On POSIX a backslash, a colon and CON are ordinary file-name characters and names."""
    assert normalize_rel("a\\b", windows=False) == "a\\b"
    assert normalize_rel("CON", windows=False) == "CON"
    assert normalize_rel("x:y", windows=False) == "x:y"
    with pytest.raises(EscapeError):
        normalize_rel("/etc/passwd", "/home/ann/proj", windows=False)


def test_default_follows_the_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace_module.sys, "platform", "win32")
    with pytest.raises(EscapeError):
        normalize_rel("NUL")
    monkeypatch.setattr(workspace_module.sys, "platform", "linux")
    assert normalize_rel("NUL") == "NUL"


async def test_tools_refuse_names_windows_cannot_hold(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model-facing boundary: on Windows, writing ``nul.txt`` would write to the NUL device
    and ``notes.txt:x`` to a hidden stream of ``notes.txt``; both are refused, with the reason."""
    from pathlib import Path

    from retrace.agent.tools import ToolContext, execute
    from retrace.engine.config import EngineConfig

    assert isinstance(tmp_path, Path)
    ctx = ToolContext(workspace=tmp_path, engine_config=EngineConfig())
    monkeypatch.setattr(workspace_module.sys, "platform", "win32")
    for name in ("nul.txt", "src/CON", "notes.txt:x", "trailing."):
        result = await execute("write_file", {"path": name, "content": "x"}, ctx)
        assert result.is_error and "refused" in result.output, (name, result.output)
        assert not (tmp_path / name).exists()
    monkeypatch.setattr(workspace_module.sys, "platform", "linux")
    ok = await execute("write_file", {"path": "nul.txt", "content": "x"}, ctx)
    assert not ok.is_error, ok.output


_POSIX_PIECES = st.sampled_from(
    ["a", "B", ".", "..", "", "/", "//", "\\", "C:", "home", "ann", "proj", "proj2", " ", "x.", "CON", "\x01"]
)
POSIX_ROOT = "/home/ann/proj"


@settings(max_examples=600, deadline=None)
@given(st.lists(_POSIX_PIECES, min_size=1, max_size=8).map("".join))
def test_posix_accepted_paths_stay_inside(text: str) -> None:
    """The same contract under POSIX rules: a backslash, a colon, ``CON`` are ordinary name
    characters there, but nothing accepted is empty, dotted, absolute, or outside the root."""
    import posixpath

    for root in (None, POSIX_ROOT):
        try:
            rel = normalize_rel(text, root, windows=False)
        except EscapeError:
            continue
        parts = rel.split("/")
        assert rel and not rel.startswith("/")
        assert all(p not in ("", ".", "..") for p in parts)
        full = posixpath.normpath(posixpath.join(POSIX_ROOT, rel))
        assert full.startswith(POSIX_ROOT + "/")
        if text.startswith("/"):
            assert root is not None and posixpath.normpath(text) == full
