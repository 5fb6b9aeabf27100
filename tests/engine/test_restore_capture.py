"""What a restore leaves for the next capture: the files it wrote are known to be what it
wrote (the watcher saw nothing but its own renames there), so neither the next capture nor the
next restore's plan reads them again; a change anyone else makes to them, during the apply or
after it, even one that keeps size and mtime, is still found; and a restore larger than the
inotify queue does not cost the next capture a full stat walk."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import write

from retrace.engine import Engine
from retrace.engine.capture import capturer as capturer_module
from retrace.engine.restore import faults
from retrace.engine.restore import restorer as restorer_module
from retrace.engine.store.blobs import blob_id

pytestmark = pytest.mark.slow

Open = Callable[..., Engine]
N = 60


def _content(i: int, version: int) -> bytes:
    return b"".join(b"file %d line %d version %d\n" % (i, n, version) for n in range(20))


def _paths(n: int = N) -> list[str]:
    return [f"d{i % 5}/f{i:04d}.py" for i in range(n)]


def _populate(ws: Path, eng_factory: Open, n: int = N) -> tuple[Engine, str, str]:
    """Version 1 of every file (the baseline), then one shell call rewriting them all."""
    for i, rel in enumerate(_paths(n)):
        write(ws, rel, _content(i, 1))
    eng = eng_factory()
    base = eng.head.id
    for i, rel in enumerate(_paths(n)):
        write(ws, rel, _content(i, 2))
    tip = eng.checkpoint("rewrite all", kind="tool").id
    return eng, base, tip


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every file the capture reads (hashes), by absolute path or leaf name."""
    seen: list[str] = []
    real = capturer_module.read_entry

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(capturer_module, "read_entry", counting)
    yield seen


def _edit_keeping_mtime(ws: Path, rel: str, data: bytes) -> None:
    """Same size, new bytes, the old mtime put back (``touch -r``-style)."""
    p = ws / rel
    st = p.stat()
    assert len(data) == st.st_size
    p.write_bytes(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_capture_after_a_restore_reads_none_of_the_restored_files(
    ws: Path, open_engine: Open, reads: list[str]
) -> None:
    eng, base, _tip = _populate(ws, open_engine)
    cap = eng.capturer
    assert cap is not None and cap.watcher_healthy
    assert eng.restore(base).kind == "applied"
    walks = cap.walks
    reads.clear()
    after = eng.checkpoint("nothing changed", kind="tool")
    assert not after.files
    assert not reads, "the restored files were read again"
    assert cap.walks == walks
    # A later edit that keeps size and mtime is still found.
    victim = _paths()[7]
    edited = _content(7, 1).replace(b"version 1", b"version X")
    _edit_keeping_mtime(ws, victim, edited)
    cp = eng.checkpoint("user edit", kind="tool")
    assert [f.path for f in cp.files] == [victim]
    assert eng.head_manifest[victim].hash == blob_id(edited)


def test_next_restore_plan_reads_none_of_the_restored_files(
    ws: Path, open_engine: Open, reads: list[str]
) -> None:
    eng, base, tip = _populate(ws, open_engine)
    assert eng.restore(base).kind == "applied"
    reads.clear()
    plan = eng.plan_restore(tip)
    assert len(plan.files) == N and all(f.action == "overwrite" for f in plan.files)
    assert not reads, "the plan read the restored files again"
    # An edit right after the restore (size and mtime kept) is a conflict, never overwritten.
    victim = _paths()[3]
    edited = _content(3, 1).replace(b"version 1", b"version Y")
    _edit_keeping_mtime(ws, victim, edited)
    out = eng.restore(tip)
    assert out.kind == "conflict"
    assert [f.path for f in out.files] == [victim]
    assert (ws / victim).read_bytes() == edited


def test_an_edit_during_the_apply_is_found_after_it(ws: Path, open_engine: Open) -> None:
    """Another writer changes a file the restore has already put in place (keeping its size and
    mtime): whether or not the restore notices, the next capture records the writer's bytes."""
    eng, base, _tip = _populate(ws, open_engine)
    first, later = _paths()[0], _paths()[N - 1]
    edited = _content(0, 1).replace(b"version 1", b"version Z")
    done: list[bool] = []

    def hook(step: str, path: str) -> None:
        if step in ("replace", "create") and path == later and not done:
            done.append(True)
            _edit_keeping_mtime(ws, first, edited)

    with faults.injected(hook):
        out = eng.restore(base)
    assert done, out
    # The apply may notice the writer (its final identity check) and roll back what it can.
    eng.checkpoint("after", kind="tool")
    assert (ws / first).read_bytes() == edited
    assert eng.head_manifest[first].hash == blob_id(edited)


def _rename_save(ws: Path, rel: str, data: bytes) -> None:
    """An editor's atomic save: a temporary file renamed over ``rel`` (mtime kept)."""
    p = ws / rel
    st = p.stat()
    tmp = p.with_name(p.name + ".swp")
    tmp.write_bytes(data)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, p)


def _chmod_x(ws: Path, rel: str, _data: bytes) -> None:
    (ws / rel).chmod(0o755)


def _remove(ws: Path, rel: str, _data: bytes) -> None:
    (ws / rel).unlink()


def _move_away_and_back(ws: Path, rel: str, data: bytes) -> None:
    """Two renames by someone else (the count of the engine's own renames must not be met by
    accident): moved away, new bytes written to the same size, moved back."""
    p = ws / rel
    aside = p.with_name(p.name + ".aside")
    os.replace(p, aside)
    st = aside.stat()
    aside.write_bytes(data)
    os.utime(aside, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(aside, p)


@pytest.mark.parametrize(
    "change", [_edit_keeping_mtime, _rename_save, _chmod_x, _remove, _move_away_and_back]
)
@pytest.mark.parametrize("when", ["before the commit", "after the restore"])
def test_any_foreign_change_to_a_restored_file_is_captured(
    ws: Path,
    open_engine: Open,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path, str, bytes], None],
    when: str,
) -> None:
    """Whatever another writer does to a file the restore has put in place (in place, by rename,
    mode, removal, or renames that could pass for the engine's own), after the apply checked its
    work and before the restore is committed (where only the watcher's events can tell), or right
    after it, the next capture records what is on disk."""
    eng, base, _tip = _populate(ws, open_engine)
    victim = _paths()[0]
    edited = _content(0, 1).replace(b"version 1", b"version Q")
    if when == "before the commit":
        real = restorer_module.RestoreTransaction.commit

        def commit(self: Any, *args: Any, **kwargs: Any) -> Any:
            change(ws, victim, edited)
            return real(self, *args, **kwargs)

        monkeypatch.setattr(restorer_module.RestoreTransaction, "commit", commit)
    assert eng.restore(base).kind == "applied"
    if when == "after the restore":
        change(ws, victim, edited)
    eng.checkpoint("after", kind="tool")
    p = ws / victim
    if not p.exists():
        assert victim not in eng.head_manifest
        return
    entry = eng.head_manifest[victim]
    assert entry.hash == blob_id(p.read_bytes())
    assert entry.executable == bool(p.stat().st_mode & 0o100)


def _max_queued_events() -> int:
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        return 0


def test_a_restore_larger_than_the_event_queue_costs_no_walk(ws: Path, open_engine: Open) -> None:
    queue = _max_queued_events()
    if not 0 < queue <= 1 << 15:
        pytest.skip(f"inotify queue of {queue} events: too large to overflow in a test")
    n = queue // 4  # several events per restored file: far more than the queue holds
    eng, base, _tip = _populate(ws, open_engine, n)
    cap = eng.capturer
    assert cap is not None and cap.watcher_healthy
    walks = cap.walks
    assert eng.restore(base).kind == "applied"
    victim = _paths(n)[5]
    write(ws, victim, b"changed after the restore\n")
    cp = eng.checkpoint("after", kind="tool")
    assert [f.path for f in cp.files] == [victim]
    assert cap.walks == walks, "the restore overflowed the watcher: a full stat walk"
    assert cap.watcher_healthy


def test_restoring_a_changed_rule_marker_costs_no_walk(ws: Path, open_engine: Open) -> None:
    """``pyproject.toml`` decides whether a ``build`` folder beside it is a tool's: the restore
    replacing it changes no folder's kind, so the watcher stays trusted; a marker someone else
    removes afterwards still makes the next capture re-evaluate with a walk."""
    write(ws, "pyproject.toml", "[project]\nname = 'a'\n")
    write(ws, "build/out.txt", "built\n")
    eng = open_engine()
    assert "build/out.txt" not in eng.head_manifest
    base = eng.head.id
    write(ws, "pyproject.toml", "[project]\nname = 'b'\n")
    eng.checkpoint("edit", kind="tool")
    cap = eng.capturer
    assert cap is not None
    walks = cap.walks
    assert eng.restore(base).kind == "applied"
    assert cap.watcher_healthy, cap.status()
    assert not eng.checkpoint("nothing", kind="tool").files
    assert cap.walks == walks
    (ws / "pyproject.toml").unlink()
    cp = eng.checkpoint("marker gone", kind="tool")
    assert {f.path for f in cp.files} == {"pyproject.toml", "build/out.txt"}
    assert cap.walks == walks + 1


def test_a_restore_whose_commit_fails_settles_nothing(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Applied but not committed: the head does not describe the restored files, so they stay
    pending and the next capture records what is on disk."""
    eng, base, _tip = _populate(ws, open_engine)

    def failing_commit(*_args: object, **_kwargs: object) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(eng, "commit_delta", failing_commit)
    with pytest.raises(OSError, match="no space"):
        eng.restore(base)
    monkeypatch.undo()
    assert (ws / _paths()[0]).read_bytes() == _content(0, 1), "the apply ran before the commit"
    eng.checkpoint("after", kind="tool")
    for rel in _paths():
        assert eng.head_manifest[rel].hash == blob_id((ws / rel).read_bytes()), rel
