"""The two file-system backends (``retrace.engine.fsops``): how one is chosen, and the class of
faults each must survive with nothing written outside the workspace and nothing lost — a
directory swapped for a link inside the very system call (only the portable backend has that
window: it detects it after the call and undoes what the call made), a reparse point (a Windows
junction) where a directory must be, a file replaced by a directory, a full disk, a read-only
directory, and shell changes found by the stat walk with the watcher off."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine, EngineConfig, fsops
from retrace.engine import workspace as workspace_module
from retrace.engine.capture import fs as capture_fs
from retrace.engine.capture import scan
from retrace.engine.errors import RetraceError
from retrace.engine.fsops import portable
from retrace.engine.restore import faults
from retrace.engine.workspace import DirTree, EscapeError
from retrace.oscompat import FILE_ATTRIBUTE_REPARSE_POINT, is_link_like


@pytest.fixture(params=["posix", "portable"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(fsops.ENV, request.param)
    yield request.param


@pytest.mark.parametrize(
    ("value", "want"),
    [("", "posix"), ("posix", "posix"), ("portable", "portable"), (" portable ", "portable")],
)
def test_choice(monkeypatch: pytest.MonkeyPatch, value: str, want: str) -> None:
    monkeypatch.setenv(fsops.ENV, value)
    assert fsops.choice() == want
    assert fsops.backend().name == want


@pytest.mark.parametrize("value", ["Portable", "openat", "posix,portable", "1"])
def test_any_other_value_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, value: str, tmp_path: Path
) -> None:
    monkeypatch.setenv(fsops.ENV, value)
    with pytest.raises(fsops.BackendChoiceError, match=r"RETRACE_FS_BACKEND=.*'posix' or 'portable'"):
        fsops.choice()
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(RetraceError, match="RETRACE_FS_BACKEND"):
        Engine.open(ws, tmp_path / "store")
    assert not (tmp_path / "store").exists()


def test_without_dir_fd_the_portable_backend_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fsops.ENV, raising=False)
    monkeypatch.setattr(os, "supports_dir_fd", set())
    assert fsops.choice() == "portable"


class _Reparse:
    """An ``lstat`` result as Windows gives it for a junction: a directory with the reparse bit."""

    def __init__(self, st: os.stat_result) -> None:
        self._st = st
        self.st_file_attributes = FILE_ATTRIBUTE_REPARSE_POINT

    def __getattr__(self, name: str) -> Any:
        return getattr(self._st, name)


def test_a_junction_is_never_entered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``d`` is a real directory whose lstat carries FILE_ATTRIBUTE_REPARSE_POINT (a junction on
    Windows): the portable backend refuses it as a link, at every depth and for every write."""
    ws = tmp_path / "ws"
    write(ws, "d/a.txt", "one\n")
    real_lstat = os.lstat
    junction = str(ws / "d")

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        st = real_lstat(path, *args, **kwargs)
        return _Reparse(st) if os.fspath(path) == junction else st

    monkeypatch.setattr(portable.os, "lstat", lstat)
    assert is_link_like(lstat(junction))  # type: ignore[arg-type]
    with DirTree(ws, portable.PORTABLE) as tree:
        with pytest.raises(EscapeError, match="symlink"):
            tree.directory("d")
        with pytest.raises(EscapeError):
            tree.parent("d/new.txt", create=[])


def _swap_inside_call(monkeypatch: pytest.MonkeyPatch, ws: Path, outside: Path, name: str) -> list[str]:
    """Swap ``ws/d`` for a link to ``outside`` INSIDE the portable backend's ``os.<name>`` call on a
    path under ``ws/d`` (after its check before, before the call acts): the one window a
    path-based backend cannot close."""
    real: Callable[..., Any] = getattr(os, name)
    swapped: list[str] = []
    prefix = str(ws / "d") + os.sep

    def call(*args: Any, **kwargs: Any) -> Any:
        paths = [os.fspath(a) for a in args[:2] if isinstance(a, (str, os.PathLike))]
        if not swapped and any(p.startswith(prefix) for p in paths) and "dir_fd" not in kwargs:
            creating = name != "open" or args[1] & os.O_CREAT
            if creating:
                (ws / "d").rename(ws / "d.moved")
                (ws / "d").symlink_to(outside, target_is_directory=True)
                swapped.append(paths[-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(portable.os, name, call)
    return swapped


@pytest.mark.parametrize("call", ["open", "rename", "mkdir"])
def test_a_swap_inside_the_call_is_detected_and_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """Portable backend: the create / rename / mkdir that went through the swapped-in link is
    detected by the identity check after it, removed from where it went, and the restore fails
    and rolls back; the outside tree ends exactly as it was, the user's files are all there."""
    monkeypatch.setenv(fsops.ENV, "portable")
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    write(ws, "d/a.txt", "one\n")
    write(outside, "keep.txt", "OUTSIDE\n")
    write(outside, "sub/new.txt", "OUTSIDE, same name\n")  # what a rename through the link would take
    write(outside, "a.txt", "OUTSIDE, same name\n")
    before_outside = entry_hashes(outside)
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "d/a.txt", "two\n")
        write(ws, "d/sub/new.txt", "new\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        if call == "mkdir":
            (ws / "d" / "sub" / "new.txt").unlink()
            (ws / "d" / "sub").rmdir()
            write(ws, "d/a.txt", "three\n")
            eng.checkpoint("more", kind="tool", tool="edit_file")
            target = eng.timeline()[-2].id
        else:
            target = base
        state = entry_hashes(ws)
        swapped = _swap_inside_call(monkeypatch, ws, outside, call)
        out = eng.restore(target, force=True)
    assert swapped, "the swap never happened: the test did not test anything"
    assert entry_hashes(outside) == before_outside, f"{call} left something outside the workspace"
    assert out.kind == "failed"
    # Nothing lost: every file of d is in d.moved (where the swap put the directory) or, when the
    # rollback refused to write back through the link, kept in the restore's trash.
    kept = {v for k, v in entry_hashes(ws).items() if k.startswith("d.moved/")}
    kept |= set(entry_hashes(tmp_path / "store").values())
    assert {v for k, v in state.items() if k.startswith("d/")} <= kept, "a file of the user's was lost"


def test_a_file_replaced_by_a_directory_before_the_write_is_a_conflict(tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    write(ws, "a.txt", "one\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "a.txt", "two\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")

        def hook(step: str, rel: str) -> None:
            if rel == "a.txt" and step == "replace" and (ws / "a.txt").is_file():
                (ws / "a.txt").unlink()
                write(ws, "a.txt/inner.txt", "someone else's\n")

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind in ("failed", "conflict")
    assert (ws / "a.txt" / "inner.txt").read_text() == "someone else's\n", "nothing lost"


def test_a_full_disk_rolls_back_everything(tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    for n in range(20):
        write(ws, f"d{n % 3}/f{n}.txt", f"one {n}\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        for n in range(20):
            write(ws, f"d{n % 3}/f{n}.txt", f"two {n}\n")
        write(ws, "new/x.txt", "x\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        state = entry_hashes(ws)
        calls: list[str] = []

        def hook(step: str, rel: str) -> None:
            calls.append(step)
            if step == "write" and len(calls) > 10:
                raise OSError(errno.ENOSPC, "No space left on device (injected)", rel)

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind == "failed"
    assert entry_hashes(ws) == state, "the failed restore left every file as it was"
    assert not [p for p in os.listdir(ws) if p.startswith(".rt-")], "no temporary or trash left"


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else False, reason="root ignores modes")
def test_a_read_only_directory_fails_cleanly(tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    write(ws, "ro/a.txt", "one\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "ro/a.txt", "two\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        (ws / "ro").chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            out = eng.restore(base)
        finally:
            (ws / "ro").chmod(0o755)
        assert out.kind == "failed"
    assert (ws / "ro" / "a.txt").read_text() == "two\n"


def test_shell_changes_are_found_without_a_watcher(tmp_path: Path, backend: str) -> None:
    """macOS and Windows have no inotify: the stat walk alone finds a shell command's creates,
    deletes, renames, mode changes and links, on both backends."""
    ws = tmp_path / "ws"
    write(ws, "a.txt", "one\n")
    write(ws, "gone.txt", "bye\n")
    write(ws, "src/old.py", "x = 1\n")
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(watcher=False)) as eng:
        assert eng.capture_status()["watcher"] is False
        base = eng.head.id
        write(ws, "a.txt", "two\n")
        (ws / "gone.txt").unlink()
        (ws / "src" / "old.py").rename(ws / "src" / "new.py")
        write(ws, "deep/er/file.txt", "deep\n")
        (ws / "a.txt").chmod(0o755)
        (ws / "link").symlink_to("a.txt")
        after = entry_hashes(ws)
        cp = eng.checkpoint("shell", kind="tool", tool="bash")
        assert sorted({f.path for f in cp.files} | {f.old_path for f in cp.files if f.old_path}) == [
            "a.txt", "deep/er/file.txt", "gone.txt", "link", "src/new.py", "src/old.py",
        ]  # fmt: skip
        eng.restore(base)
        assert sorted(entry_hashes(ws)) == ["a.txt", "gone.txt", "src/old.py"]
        eng.restore(cp.id)
        assert entry_hashes(ws) == after


class _Entry:
    """A ``DirEntry`` as Windows lists a junction: ``is_dir(follow_symlinks=False)`` is true."""

    name = "junction"

    def __init__(self, st: os.stat_result, attributes: int) -> None:
        self._st = _Reparse(st)
        self._st.st_file_attributes = attributes

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return True

    def stat(self, *, follow_symlinks: bool = True) -> Any:
        return self._st


def test_the_walk_never_enters_a_junction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    st = os.lstat(tmp_path)
    monkeypatch.setattr(scan.os, "name", "nt")
    assert not scan.enterable(_Entry(st, FILE_ATTRIBUTE_REPARSE_POINT))  # type: ignore[arg-type]
    assert scan.enterable(_Entry(st, 0x10))  # type: ignore[arg-type]  # a plain directory


def test_without_o_nofollow_a_final_link_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has no ``O_NOFOLLOW``: the open follows a final link, and the check after it
    (the path's lstat is the descriptor's file, not a link) refuses what it reached."""
    ws, secret = tmp_path / "ws", tmp_path / "secret.txt"
    write(ws, "plain.txt", "mine\n")
    secret.write_text("OUTSIDE\n")
    (ws / "link.txt").symlink_to(secret)
    monkeypatch.setattr(capture_fs, "O_NOFOLLOW", 0)
    monkeypatch.setattr(capture_fs, "READ_FLAGS", capture_fs.READ_FLAGS & ~os.O_NOFOLLOW)
    assert capture_fs.read_regular(str(ws / "plain.txt")) == b"mine\n"
    with pytest.raises(capture_fs.NotRegularFileError):
        capture_fs.read_regular(str(ws / "link.txt"))


def test_portable_open_refuses_a_link_swapped_in_before_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, secret = tmp_path / "ws", tmp_path / "secret.txt"
    write(ws, "a.txt", "mine\n")
    secret.write_text("OUTSIDE\n")
    monkeypatch.setattr(portable, "_READ", portable._READ & ~os.O_NOFOLLOW)  # as on Windows
    real_open = os.open

    def swapping_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == str(ws / "a.txt"):
            (ws / "a.txt").unlink()
            (ws / "a.txt").symlink_to(secret)
        return real_open(path, flags, *args, **kwargs)

    with DirTree(ws, portable.PORTABLE) as tree:
        d, name = tree.parent("a.txt")
        monkeypatch.setattr(portable.os, "open", swapping_open)
        with pytest.raises(OSError) as caught:
            tree.fs.open_file(d, name)
    assert caught.value.errno == errno.ESTALE


def test_a_read_only_file_is_restored_with_its_mode(tmp_path: Path, backend: str) -> None:
    """A read-only file is never written in place: the new version is renamed in (the old one
    moved to the trash first on the portable backend), content and mode come back exactly."""
    ws = tmp_path / "ws"
    write(ws, "ro.txt", "one\n")
    (ws / "ro.txt").chmod(0o444)
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        (ws / "ro.txt").chmod(0o644)
        write(ws, "ro.txt", "two\n")
        (ws / "ro.txt").chmod(0o444)
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        assert eng.restore(base).kind == "applied"
    assert (ws / "ro.txt").read_text() == "one\n"
    assert stat.S_IMODE((ws / "ro.txt").stat().st_mode) == 0o444


def test_permission_refused_mid_apply_rolls_back(tmp_path: Path, backend: str) -> None:
    """What a read-only folder does to a non-root process (injected: CI runs as root)."""
    ws = tmp_path / "ws"
    write(ws, "a.txt", "one\n")
    write(ws, "ro/b.txt", "bee\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "a.txt", "two\n")
        write(ws, "ro/b.txt", "bee two\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        state = entry_hashes(ws)

        def hook(step: str, rel: str) -> None:
            if rel == "ro/b.txt" and step in ("write", "replace"):
                raise PermissionError(errno.EACCES, "Permission denied (injected)", rel)

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind == "failed"
    assert entry_hashes(ws) == state


@pytest.mark.parametrize("rel", ["CON", "d/nul.txt", "d/a:stream", "trail.", "d/COM1.log"])
def test_on_windows_the_lowest_level_refuses_names_windows_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    ws = tmp_path / "ws"
    write(ws, "d/ok.txt", "ok\n")
    with DirTree(ws, portable.PORTABLE) as tree:
        monkeypatch.setattr(workspace_module.sys, "platform", "win32")
        with pytest.raises(EscapeError):
            tree.parent(rel, create=[])
        assert tree.parent("d/ok.txt")[1] == "ok.txt"
