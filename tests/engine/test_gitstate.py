"""The git state stamped on checkpoints: read from real repositories made by git, no git run."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.handoff.git_support import git_text as git

from retrace.engine import Engine
from retrace.engine.gitstate import GitState, parse_packed_refs, read_git_state


def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-q", "-m", "one")
    return ws


def test_no_repository_is_nothing(tmp_path: Path) -> None:
    assert read_git_state(tmp_path) is None


def test_branch_head_and_index(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    state = read_git_state(ws)
    assert state == GitState(git(ws, "rev-parse", "HEAD"), "main", False, False)
    (ws / "b.txt").write_text("b\n")
    git(ws, "add", "b.txt")
    assert read_git_state(ws) == GitState(git(ws, "rev-parse", "HEAD"), "main", False, True)
    git(ws, "commit", "-q", "-m", "two")
    after = read_git_state(ws)
    assert after is not None and after.head == git(ws, "rev-parse", "HEAD") and not after.index_dirty


def test_switch_detach_packed_and_subfolder(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    git(ws, "switch", "-q", "-c", "feature")
    (ws / "sub").mkdir()
    assert read_git_state(ws / "sub") == GitState(git(ws, "rev-parse", "HEAD"), "feature", False, False)
    git(ws, "pack-refs", "--all")
    assert not (ws / ".git" / "refs" / "heads" / "feature").exists()
    state = read_git_state(ws)
    assert state is not None and state.branch == "feature" and state.head == git(ws, "rev-parse", "HEAD")
    git(ws, "checkout", "-q", "--detach")
    assert read_git_state(ws) == GitState(git(ws, "rev-parse", "HEAD"), None, True, False)


def test_unborn_branch(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "trunk")
    assert read_git_state(ws) == GitState(None, "trunk", False, False)


def test_linked_worktree(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    other = tmp_path / "other"
    git(ws, "worktree", "add", "-q", "-b", "side", str(other))
    assert (other / ".git").is_file()
    assert read_git_state(other) == GitState(git(other, "rev-parse", "HEAD"), "side", False, False)


def test_malformed_files_give_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text("gitdir: nowhere\n")
    assert read_git_state(ws) is None
    (ws / ".git").unlink()
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("garbage\n")
    assert read_git_state(ws) is None
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/../../../etc/passwd\n")
    state = read_git_state(ws)
    assert state is None or state.head is None
    (ws / ".git" / "HEAD").write_bytes(b"x" * 100_000)
    assert read_git_state(ws) is None
    assert GitState.from_meta({"head": "nothex", "branch": "x"}) is None
    assert GitState.from_meta("x") is None


def test_packed_refs_parse() -> None:
    oid = "a" * 40
    text = f"# pack-refs with: peeled\n{oid} refs/heads/main\n^{'b' * 40}\nbad line\n{oid} refs/tags/v1\n"
    assert parse_packed_refs(text) == {"refs/heads/main": oid, "refs/tags/v1": oid}


def test_checkpoints_carry_git_and_the_move(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    engine = Engine.open(ws, tmp_path / "store")
    try:
        first = engine.checkpoint("one")
        assert first.meta["git"]["branch"] == "main" and "gitBefore" not in first.meta
        git(ws, "switch", "-q", "-c", "feature")
        second = engine.checkpoint("two")
        assert second.meta["git"]["branch"] == "feature"
        assert second.meta["gitBefore"]["branch"] == "main"
        third = engine.checkpoint("three")
        assert "gitBefore" not in third.meta
    finally:
        engine.close()


def test_a_fifo_in_place_of_head_or_packed_refs_never_blocks(tmp_path: Path) -> None:
    import os

    ws = repo(tmp_path)
    git(ws, "pack-refs", "--all")
    packed = ws / ".git" / "packed-refs"
    packed.unlink()
    os.mkfifo(packed)
    state = read_git_state(ws)  # the branch's ref is gone and packed-refs is a FIFO: no hang
    assert state is not None and state.branch == "main" and state.head is None
    head = ws / ".git" / "HEAD"
    head.unlink()
    os.mkfifo(head)
    assert read_git_state(ws) is None


def test_a_repository_made_after_the_store_opened_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrace.engine import gitstate

    ws = tmp_path / "ws"
    ws.mkdir()
    reader = gitstate.GitStateReader(ws)
    assert reader.read() is None
    git(ws, "init", "-q", "-b", "late")
    monkeypatch.setattr(gitstate, "LOOK_AGAIN_S", 0.0)
    assert reader.read() == GitState(None, "late", False, False)
