"""Nothing escapes the workspace writer, whatever plan it is handed (safety round 3, items 1-2).

The plans here bypass the planner and :func:`normalize_rel` entirely: forged operations with
``..``, ``.``, empty, absolute and ``.git`` components, NUL bytes, and paths through symlinks
(to files, to directories, into ``.git``, outside the workspace, dangling) go straight to the
disk applier. Whatever happens, everything outside the workspace and everything in ``.git`` is
byte-identical afterwards, and no temporary or trash entry is left in the workspace."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles import entries_and_modes

from retrace.engine.models import FileEntry
from retrace.engine.restore.disk import apply_disk
from retrace.engine.restore.ops import DiskOp, Seen
from retrace.engine.workspace import DirTree, EscapeError, is_temp_name

COMPONENTS = ["..", ".", "", ".git", "a", "b", "ln_file", "ln_dir", "ln_git", "ln_out", "ln_dangling", "x\0y"]


def make_layout(base: Path) -> tuple[Path, Path, Path]:
    """A workspace with a ``.git``, files, and links of every kind; a sibling ``outside``."""
    ws, outside, store = base / "ws", base / "outside", base / "store"
    for d in (ws / ".git" / "refs", ws / "a" / "b", outside / "a"):
        d.mkdir(parents=True, exist_ok=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "a" / "f.txt").write_text("mine\n")
    (ws / "a" / "b" / "g.txt").write_text("mine too\n")
    (outside / "secret").write_text("outside\n")
    (outside / "a" / "f.txt").write_text("outside f\n")
    (ws / "ln_file").symlink_to("a/f.txt")
    (ws / "ln_dir").symlink_to("a")
    (ws / "ln_git").symlink_to(".git")
    (ws / "ln_out").symlink_to(str(outside))
    (ws / "ln_dangling").symlink_to("nowhere")
    (ws / "a" / "ln_up").symlink_to("..")
    return ws, outside, store


def entry(data: bytes) -> FileEntry:
    return FileEntry(kind="file", hash=hashlib.sha256(data).hexdigest(), size=len(data))


def op_for(path: str, kind: str) -> DiskOp:
    data = b"forged\n"
    if kind == "delete":
        return DiskOp(path, "delete", None, Seen(None, anything=True))
    if kind == "chmod":
        return DiskOp(
            path,
            "chmod",
            FileEntry(kind="file", hash=None, executable=True, size=0),
            Seen(None, anything=True),
        )
    return DiskOp(
        path, "write", entry(data), Seen(None, anything=True), source=lambda: data, replace_directory=True
    )


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret",
        "a/../../outside/secret",
        "/etc/retrace-forged",
        ".git/config",
        "a/.git/config",
        ".git",
        "ln_git/config",
        "ln_out/secret",
        "ln_out/a/f.txt",
        "ln_dir/f.txt",
        "a/ln_up/a/f.txt",
        "./a/f.txt",
        "a//f.txt",
        "a/\0/f.txt",
    ],
)
@pytest.mark.parametrize("kind", ["write", "delete", "chmod"])
def test_a_forged_path_changes_nothing_outside_or_in_git(tmp_path: Path, path: str, kind: str) -> None:
    ws, outside, store = make_layout(tmp_path)
    before_out, before_git = entries_and_modes(outside), entries_and_modes(ws / ".git")
    before_ws = entries_and_modes(ws)
    res = apply_disk(ws, store / "trash" / "t", [op_for(path, kind)])
    assert entries_and_modes(outside) == before_out
    assert entries_and_modes(ws / ".git") == before_git
    assert not Path("/etc/retrace-forged").exists()
    top = path.split("/", maxsplit=1)[0]
    if top.startswith("ln_") or "/ln_up/" in path:
        # Through a link: the link is an entry of the workspace. A (forced) write replaces the
        # link itself with a real directory; a delete finds nothing of the workspace there.
        after = entries_and_modes(ws)
        assert all(after.get(k) == v for k, v in before_ws.items() if not k.startswith(top))
        return
    assert not res.ok, f"{kind} {path!r} was applied"
    assert res.rolled_back
    assert entries_and_modes(ws) == before_ws


@settings(max_examples=250, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=5).map("/".join),
            st.sampled_from(["write", "delete", "chmod"]),
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda t: t[0],
    )
)
def test_random_forged_plans_never_touch_outside_or_git(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str]]
) -> None:
    base = tmp_path_factory.mktemp("forged")
    ws, outside, store = make_layout(base)
    before_out, before_git, before_ws = (
        entries_and_modes(outside),
        entries_and_modes(ws / ".git"),
        entries_and_modes(ws),
    )
    res = apply_disk(ws, store / "trash" / "t", [op_for(p, k) for p, k in ops])
    assert entries_and_modes(outside) == before_out
    assert entries_and_modes(ws / ".git") == before_git
    assert not any(is_temp_name(Path(p).name) for p in entries_and_modes(ws))
    if not res.ok:
        assert res.rolled_back, res.error
        assert entries_and_modes(ws) == before_ws


@pytest.mark.parametrize("rel", ["..", "a/..", "/a", "a//b", "./a", ".git", "a/.git/x", "a\0b", ""])
def test_dir_tree_refuses_every_bad_component(tmp_path: Path, rel: str) -> None:
    (tmp_path / "a").mkdir()
    with DirTree(tmp_path) as tree, pytest.raises(EscapeError):
        tree.lstat(rel)


@pytest.mark.parametrize(
    ("name", "case_sensitive", "ignoring_case"),
    [
        (".git", True, True),
        (".GIT", False, True),
        (".Git.", False, True),
        ("GIT~1", False, True),
        (".g\u200cit", False, True),
        (".gitignore", False, False),
        ("git", False, False),
    ],
)
def test_git_names_per_file_system(
    monkeypatch: pytest.MonkeyPatch, name: str, case_sensitive: bool, ignoring_case: bool
) -> None:
    from retrace import oscompat
    from retrace.engine.workspace import is_git_name

    monkeypatch.setattr(oscompat, "ignores_case", lambda: False)
    assert is_git_name(name) is case_sensitive
    monkeypatch.setattr(oscompat, "ignores_case", lambda: True)
    assert is_git_name(name) is ignoring_case
