"""One store per folder: the rule (:mod:`retrace.engine.store.home`) and the adoption of an old
extension store (:mod:`retrace.engine.store.adopt`): the pure decision table, then the real file
system (rename, a rename that fails with EXDEV, pointers forged or damaged, both stores present,
an old store locked by a running server, a kill at each step)."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest

from retrace.engine import Engine
from retrace.engine.store import adopt as adopt_mod
from retrace.engine.store import home
from retrace.engine.store.adopt import Action, Facts, Legacy, adopt, classify, decide
from retrace.engine.store.layout import default_store_dir
from retrace.engine.store.lock import StoreLock

OLD = Path("/old/store")
REAL_RENAME, REAL_REPLACE = os.rename, os.replace  # the os module is shared: patches are global
ELSEWHERE = Path("/elsewhere/store")


def facts(**kw: object) -> Facts:
    base: dict[str, object] = {
        "explicit": False,
        "home_has_store": False,
        "pointer": None,
        "legacy": Legacy.VALID,
        "legacy_path": OLD,
        "locked": False,
    }
    base.update(kw)
    return Facts(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "action", "noted"),
    [
        ({}, Action.MOVE, False),
        ({"legacy": Legacy.MISSING}, Action.DEFAULT, False),
        ({"legacy": Legacy.MISSING, "home_has_store": True}, Action.DEFAULT, False),
        ({"legacy": Legacy.INVALID}, Action.DEFAULT, True),
        ({"legacy": Legacy.INVALID, "locked": True}, Action.DEFAULT, True),
        ({"explicit": True}, Action.DEFAULT, True),
        ({"home_has_store": True}, Action.DEFAULT, True),
        ({"home_has_store": True, "locked": True}, Action.DEFAULT, True),
        ({"pointer": OLD}, Action.DEFAULT, False),
        ({"pointer": ELSEWHERE}, Action.DEFAULT, True),
        ({"locked": True}, Action.LEGACY, True),
        ({"legacy": Legacy.LINK}, Action.POINT, True),
        ({"legacy": Legacy.LINK, "locked": True}, Action.LEGACY, True),
    ],
)
def test_decision_table(given: dict[str, object], action: Action, noted: bool) -> None:
    decision = decide(facts(**given))
    assert decision.action is action
    assert (decision.note is not None) is noted


# ---------------------------------------------------------------- real file system


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "retrace" / "stores"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "my proj"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    return root.resolve()


def make_store(ws: Path, store: Path, label: str = "old work") -> str:
    """A real store for ``ws`` at ``store`` with one checkpoint labelled ``label``; its id."""
    (ws / "a.txt").write_text(f"{label}\n")
    with Engine.open(ws, store) as engine:
        return engine.checkpoint(label=label).id


def labels(ws: Path, store: Path | None = None) -> set[str]:
    with Engine.open(ws, store, readonly=True) as engine:
        return {cp.label for cp in engine.timeline() if cp.label}


def test_default_is_the_home_when_nothing_exists(data: Path, ws: Path) -> None:
    assert default_store_dir(ws) == home.store_home(ws)
    assert default_store_dir(ws).parent == data and default_store_dir(ws).name.startswith("my-proj-")


def test_old_store_is_moved_home_with_one_rename(data: Path, ws: Path, tmp_path: Path) -> None:
    old = tmp_path / "workspaceStorage" / "abc" / "retrace.retrace" / "store"
    cp = make_store(ws, old)
    inode = old.stat().st_ino
    result = adopt(ws, old)
    assert result.action == "moved" and result.store == home.store_home(ws)
    assert not old.exists() and result.store.stat().st_ino == inode  # renamed, not copied
    assert default_store_dir(ws) == result.store
    with Engine.open(ws, None, readonly=True) as engine:
        assert cp in {c.id for c in engine.timeline()}
    # Idempotent: the next start finds nothing to adopt.
    assert adopt(ws, old).action == "default"


def exdev(src: object, dst: object) -> None:
    raise OSError(errno.EXDEV, "Invalid cross-device link")


def test_another_file_system_leaves_the_store_and_points_at_it(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "other-disk" / "store"
    make_store(ws, old, "kept where it is")
    monkeypatch.setattr(adopt_mod.os, "rename", exdev)
    result = adopt(ws, old)
    monkeypatch.undo()
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert result.action == "pointed" and result.store == old and (old / "store.json").is_file()
    pointer = home.pointer_file(home.store_home(ws))
    assert json.loads(pointer.read_text()) == {"store": str(old), "workspace": str(ws)}
    assert default_store_dir(ws) == old  # every reader of the rule follows it
    assert "kept where it is" in labels(ws)
    # The next start does not try again, nor complain.
    assert adopt(ws, old).action == "default" and adopt(ws, old).store == old


def test_any_failed_rename_points_instead_of_copying(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    # A home left non-empty without a store.json (a creation killed half-way): rename refuses.
    (home.store_home(ws) / "blobs").mkdir(parents=True)
    result = adopt(ws, old)
    assert result.action == "pointed" and default_store_dir(ws) == old


def test_pointer_that_cannot_be_written_uses_the_old_store_this_time(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    monkeypatch.setattr(adopt_mod.os, "rename", exdev)

    def no_pointer(*args: object, **kw: object) -> Path:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(home, "write_pointer", no_pointer)
    result = adopt(ws, old)
    assert result.action == "legacy" and result.store == old and (old / "store.json").is_file()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"store": 7}',
        b'{"store": "relative/store"}',
        b'{"store": "/no/such/dir"}',
        b'{"store": "/tmp"}',  # a directory without a store.json
        b'{"store": "/x\\u0000y"}',
        b"{" + b" " * (home.MAX_POINTER_BYTES + 10) + b"}",
    ],
)
def test_damaged_pointer_is_ignored_with_a_log_line(
    data: Path, ws: Path, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    pointer = home.pointer_file(home.store_home(ws))
    pointer.parent.mkdir(parents=True)
    pointer.write_bytes(body)
    with caplog.at_level(logging.WARNING, logger=home.__name__):
        assert default_store_dir(ws) == home.store_home(ws)
    assert any("store pointer" in r.getMessage() and "ignored" in r.getMessage() for r in caplog.records)


def test_forged_pointer_to_another_folders_store_is_ignored(
    data: Path, ws: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    other_store = tmp_path / "other-store"
    make_store(other_ws.resolve(), other_store)
    home.write_pointer(ws, other_store)
    with caplog.at_level(logging.WARNING, logger=home.__name__):
        assert default_store_dir(ws) == home.store_home(ws)
    assert any("belongs to workspace" in r.getMessage() for r in caplog.records)


def test_pointer_into_the_workspace_is_ignored(
    data: Path, ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    inside = ws / ".hidden-store"
    inside.mkdir()
    (inside / "store.json").write_text(json.dumps({"formatVersion": 1, "workspace": str(ws)}))
    home.write_pointer(ws, inside)
    with caplog.at_level(logging.WARNING, logger=home.__name__):
        assert default_store_dir(ws) == home.store_home(ws)
    assert any("inside the workspace" in r.getMessage() for r in caplog.records)


def test_home_with_a_store_beats_a_pointer(data: Path, ws: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    home.write_pointer(ws, old)
    make_store(ws, home.store_home(ws), "home")
    assert default_store_dir(ws) == home.store_home(ws)


def test_both_present_keeps_the_home_and_leaves_the_old_alone(
    data: Path, ws: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = tmp_path / "old"
    make_store(ws, old, "old")
    make_store(ws, home.store_home(ws), "new")
    before = sorted(p.relative_to(old) for p in old.rglob("*"))
    with caplog.at_level(logging.INFO, logger=adopt_mod.__name__):
        result = adopt(ws, old)
    assert result.action == "default" and result.store == home.store_home(ws)
    assert sorted(p.relative_to(old) for p in old.rglob("*")) == before  # untouched, not merged
    assert "old" not in labels(ws) and "new" in labels(ws)
    assert sum("left alone" in r.getMessage() for r in caplog.records) == 1


def test_locked_old_store_is_used_where_it_is(
    data: Path, ws: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    running = StoreLock(old / "lock")  # an older server holding it (another open file: flock conflicts)
    running.acquire()
    try:
        with caplog.at_level(logging.INFO, logger=adopt_mod.__name__):
            result = adopt(ws, old)
    finally:
        running.release()
    assert result.action == "legacy" and result.store == old and old.is_dir()
    assert not home.store_home(ws).exists() and not home.pointer_file(home.store_home(ws)).exists()
    assert any("in use by another Retrace server" in r.getMessage() for r in caplog.records)
    # Once that server is gone, the next start moves it.
    assert adopt(ws, old).action == "moved"


def test_old_store_of_another_folder_or_inside_the_folder_is_left_alone(
    data: Path, ws: Path, tmp_path: Path
) -> None:
    other_ws = tmp_path / "other"
    other_ws.mkdir()
    foreign = tmp_path / "foreign"
    make_store(other_ws.resolve(), foreign)
    assert classify(foreign, ws) is Legacy.INVALID
    assert adopt(ws, foreign).action == "default" and (foreign / "store.json").is_file()
    inside = ws / ".store"
    inside.mkdir()
    (inside / "store.json").write_text(json.dumps({"formatVersion": 1, "workspace": str(ws)}))
    assert classify(inside, ws) is Legacy.INVALID
    assert classify(Path("relative/store"), ws) is Legacy.INVALID
    assert classify(tmp_path / "missing", ws) is Legacy.MISSING
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "store.json").write_text("{not json")
    assert classify(damaged, ws) is Legacy.INVALID


def test_old_store_behind_a_link_is_pointed_at(data: Path, ws: Path, tmp_path: Path) -> None:
    real = tmp_path / "real-store"
    make_store(ws, real)
    link = tmp_path / "link-store"
    link.symlink_to(real)
    result = adopt(ws, link)
    assert result.action == "pointed" and link.is_symlink() and real.is_dir()
    assert default_store_dir(ws) == link


def test_explicit_store_wins_and_nothing_moves(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    monkeypatch.setenv("RETRACE_STORE", str(tmp_path / "explicit"))
    result = adopt(ws, old)
    assert result.store == (tmp_path / "explicit").resolve() and old.is_dir()
    assert not home.store_home(ws).exists()


def test_a_kill_at_any_step_leaves_one_usable_store(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Killed before the rename: the old store is intact and the next start moves it.
    old = tmp_path / "old"
    cp = make_store(ws, old)

    class Killed(BaseException):
        pass

    def killed(src: object, dst: object) -> None:
        raise Killed

    monkeypatch.setattr(adopt_mod.os, "rename", killed)
    with pytest.raises(Killed):
        adopt(ws, old)
    assert (old / "store.json").is_file() and default_store_dir(ws) == home.store_home(ws)
    # The lock taken for the move died with the attempt (released): the next start can move.
    monkeypatch.setattr(adopt_mod.os, "rename", REAL_RENAME)
    assert adopt(ws, old).action == "moved"
    with Engine.open(ws, None, readonly=True) as engine:
        assert cp in {c.id for c in engine.timeline()}


def test_killed_while_writing_the_pointer_leaves_no_pointer(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old"
    make_store(ws, old)
    monkeypatch.setattr(adopt_mod.os, "rename", exdev)

    class Killed(BaseException):
        pass

    def killed(src: object, dst: object) -> None:
        if str(dst).endswith(home.POINTER_SUFFIX):
            raise Killed
        REAL_REPLACE(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(home.os, "replace", killed)
    with pytest.raises(Killed):
        adopt(ws, old)
    monkeypatch.setattr(home.os, "replace", REAL_REPLACE)
    pointer = home.pointer_file(home.store_home(ws))
    assert not pointer.exists() and list(pointer.parent.iterdir()) == []  # no temporary left
    assert adopt(ws, old).action == "pointed" and default_store_dir(ws) == old


def test_a_store_created_at_home_during_the_move_is_the_one_everyone_uses(
    data: Path, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process (a hook's cold path) creates the home store between the decision and the
    # rename: the rename fails (the home is not empty), the pointer is written, yet the server
    # must open the home store like every other process, never the old one.
    old = tmp_path / "old"
    make_store(ws, old, "old")

    def raced(src: object, dst: object) -> None:
        make_store(ws, home.store_home(ws), "made by a hook meanwhile")
        REAL_RENAME(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(adopt_mod.os, "rename", raced)
    result = adopt(ws, old)
    monkeypatch.setattr(adopt_mod.os, "rename", REAL_RENAME)
    assert result.action == "pointed" and result.store == home.store_home(ws) == default_store_dir(ws)
    assert (old / "store.json").is_file()  # left alone, whole
    assert "made by a hook meanwhile" in labels(ws)
