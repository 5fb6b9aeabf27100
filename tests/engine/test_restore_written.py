"""The disk restore verifies what it WROTE (the bytes handed to the kernel are hashed as they are
written and must be the recorded content), keeps its compare-and-swap for every path it changes
even when the plan left some paths alone, and drains the watcher once for a restore that cannot
overflow the kernel's event queue."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.engine.conftest import write
from tests.oracles import entry_hashes

from retrace.engine import Engine
from retrace.engine.restore import disk, faults
from retrace.engine.workspace import TEMP_PREFIX

Open = Callable[..., Engine]


def _paths(n: int) -> list[str]:
    return [f"d{i % 3}/f{i:03d}.txt" for i in range(n)]


def _history(ws: Path, open_engine: Open, n: int) -> tuple[Engine, str]:
    """Version 1 of ``n`` files as the baseline, then one checkpoint rewriting every file."""
    for i, rel in enumerate(_paths(n)):
        write(ws, rel, f"file {i} version 1\n" * 20)
    eng = open_engine()
    base = eng.head.id
    for i, rel in enumerate(_paths(n)):
        write(ws, rel, f"file {i} version 2\n" * 20)
    eng.checkpoint("rewrite", _paths(n))
    return eng, base


def _temps(root: Path) -> list[Path]:
    return list(root.rglob(f"{TEMP_PREFIX}*"))


@pytest.mark.parametrize("n", [1, 3, disk.PARALLEL_WRITES_FROM * 2])
@pytest.mark.parametrize("victim_at", [0, -1])
def test_a_wrong_byte_handed_to_the_writer_changes_nothing(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch, n: int, victim_at: int
) -> None:
    """Content from the recent-blob memory is not re-read from the store: a byte flipped there
    after it was verified would be written as is. The writer hashes what it writes, so the
    restore fails and rolls back (sequential and threaded writes alike)."""
    eng, base = _history(ws, open_engine, n)
    victim = f"file {_paths(n).index(_paths(n)[victim_at])} version 1\n".encode() * 20
    blobs = eng.blobs  # the fault is injected at the content source
    real = blobs.get_cached

    def flipped(bid: str) -> bytes:
        data = real(bid)
        return bytes([data[0] ^ 1]) + data[1:] if data == victim else data

    monkeypatch.setattr(blobs, "get_cached", flipped)
    before = entry_hashes(ws)
    out = eng.restore(base)
    assert out.kind == "failed" and out.rolled_back, out
    assert _paths(n)[victim_at] in out.error
    assert entry_hashes(ws) == before
    assert not _temps(ws)
    assert eng.head.kind != "restore"


def test_restoring_a_path_already_as_planned_still_guards_the_others(ws: Path, open_engine: Open) -> None:
    """One path already holds the target's content (nothing to write there); another changes
    between the plan and the apply: that one is a conflict, nothing is overwritten, and the
    concurrent content stays exactly as written."""
    eng, base = _history(ws, open_engine, 4)
    paths = _paths(4)
    write(ws, paths[0], "file 0 version 1\n" * 20)  # already the target's content
    eng.checkpoint("by hand", [paths[0]])
    planned = {f.path for f in eng.plan_restore(base).files}
    assert paths[0] not in planned and set(paths[1:]) <= planned
    concurrent = b"written by someone else meanwhile\n"
    fired: list[str] = []

    def hook(step: str, rel: str) -> None:
        if step in ("replace", "create") and not fired:
            fired.append(rel)
            (ws / paths[3]).write_bytes(concurrent)

    with faults.injected(hook):
        out = eng.restore(base)
    assert fired, "the apply never reached a rename"
    assert out.kind == "conflict", out
    assert (ws / paths[3]).read_bytes() == concurrent
    for i, rel in enumerate(paths[1:3], start=1):
        assert (ws / rel).read_text() == f"file {i} version 2\n" * 20, rel
    assert not _temps(ws)


def test_a_small_restore_drains_the_watcher_once(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below :data:`disk.DRAIN_FROM` operations the queue cannot overflow: the apply does not
    stop to drain it; settling the restore's own renames drains it once."""
    n = min(disk.DRAIN_FROM - 1, 300)
    try:
        queue = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        queue = 0
    if queue < n * 12:
        pytest.skip(f"inotify queue of {queue} events: a restore of {n} files may overflow it")
    eng, base = _history(ws, open_engine, n)
    cap = eng.capturer
    assert cap is not None
    if not cap.watcher_healthy:
        pytest.skip("no healthy watcher here")
    drains: list[int] = []
    real = cap.drain_own_renames
    monkeypatch.setattr(cap, "drain_own_renames", lambda: (drains.append(1), real())[1])
    walks = cap.walks
    assert eng.restore(base).kind == "applied"
    assert drains == []
    victim = _paths(n)[7]
    write(ws, victim, b"changed after the restore\n")
    cp = eng.checkpoint("after", kind="tool")
    assert [f.path for f in cp.files] == [victim]
    assert cap.walks == walks


def test_the_targets_ignore_rules_come_from_one_history_lookup(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path ignored by a nested ``.gitignore`` of the target is kept (not created, not
    deleted), whatever the depth; the target's ``.gitignore`` files are looked up in the
    history once for the whole plan, not once per directory."""
    write(ws, "a/b/c/.gitignore", "secret.txt\n")
    for d in ("a", "a/b", "a/b/c", "x/y"):
        write(ws, f"{d}/keep.txt", f"{d}\n")
    eng = open_engine()
    base = eng.head.id
    (ws / "a/b/c/.gitignore").unlink()
    write(ws, "a/b/c/secret.txt", "now tracked\n")
    for d in ("a", "a/b", "x/y"):
        write(ws, f"{d}/keep.txt", f"{d} v2\n")
    eng.checkpoint(
        "un-ignore", ["a/b/c/.gitignore", "a/b/c/secret.txt", "a/keep.txt", "a/b/keep.txt", "x/y/keep.txt"]
    )
    lookups: list[list[str]] = []
    real = eng.entries_at

    def counting(cid: str, paths: object) -> object:
        wanted = list(paths)  # type: ignore[call-overload]
        if wanted and all(p.endswith(".gitignore") for p in wanted):  # the rules, not the scope
            lookups.append(wanted)
        return real(cid, wanted)

    monkeypatch.setattr(eng, "entries_at", counting)
    plan = eng.plan_restore(base)
    assert {k.path for k in plan.kept} == {"a/b/c/secret.txt"}
    assert len(lookups) == 1, lookups
    out = eng.restore(base)
    assert out.kind == "applied", out
    assert (ws / "a/b/c/secret.txt").read_text() == "now tracked\n"
    assert (ws / "a/b/c/.gitignore").read_text() == "secret.txt\n"
    assert (ws / "x/y/keep.txt").read_text() == "x/y\n"
