"""The deferred catch-up (``Engine.open(defer_catch_up=True)`` / ``Engine.catch_up``).

The invariant: whatever runs first after a deferred open, the store ends up exactly as after an
ordinary open followed by the same action — the change made while closed is its own
``external`` checkpoint on top of the head it was made against, never folded into the action's
checkpoint, never mistaken for an unrecorded change by a restore.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import write

from retrace.engine import Engine, EngineConfig
from retrace.engine.errors import RetraceError


def _history(ws: Path, store: Path) -> str:
    """Two tool checkpoints, then (engine closed) a change nobody recorded; returns the first
    tool checkpoint's id."""
    write(ws, "a.txt", "one\n")
    write(ws, "keep.txt", "keep\n")
    with Engine.open(ws, store, config=EngineConfig()) as eng:
        write(ws, "a.txt", "two\n")
        first = eng.checkpoint("edit a", ["a.txt"]).id
        write(ws, "b.txt", "bee\n")
        eng.checkpoint("write b", ["b.txt"])
    write(ws, "a.txt", "changed while closed\n")
    (ws / "keep.txt").unlink()
    write(ws, "new/c.txt", "sea\n")
    return first


def _tool_edit(eng: Engine) -> Any:
    # The path it announces changed while the engine was closed: that change is not the tool's.
    return eng.checkpoint("tool", ["a.txt", "keep.txt"])


def _tool_shell(eng: Engine) -> Any:
    return eng.checkpoint("shell")


ACTIONS: dict[str, Callable[[Engine, str], Any]] = {
    "checkpoint of announced paths": lambda e, _f: _tool_edit(e),
    "checkpoint detecting changes": lambda e, _f: _tool_shell(e),
    "record_external": lambda e, _f: e.record_external(),
    "record_foreign": lambda e, _f: e.record_foreign("background", {}),
    "catch_up": lambda e, _f: e.catch_up(),
    "restore": lambda e, f: e.restore(f).kind,
    "restore forced": lambda e, f: e.restore(f, force=True).kind,
    "restore dry run": lambda e, f: e.restore(f, dry_run=True).kind,
    "plan_restore": lambda e, f: [(p.path, p.action) for p in e.plan_restore(f).files],
    "safety checkpoint": lambda e, _f: e.take_safety_checkpoint(),
    "unrecorded_changes": lambda e, _f: sorted(e.unrecorded_changes()),
    "gc": lambda e, _f: e.gc().checkpoints_dropped,
}


def _shape(eng: Engine) -> list[tuple[str, str, list[str], bool]]:
    """The timeline as the user sees it: kind, label, changed files, parent is the previous one."""
    cps = eng.timeline()
    return [
        (c.kind, c.label.split(" ")[0], sorted(f.path for f in c.files), i > 0 and c.parent == cps[i - 1].id)
        for i, c in enumerate(cps)
    ]


def _run(tmp: Path, action: str, *, defer: bool) -> tuple[object, list[tuple[str, str, list[str], bool]]]:
    ws, store = tmp / "ws", tmp / "store"
    ws.mkdir(parents=True)
    first = _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=defer) as eng:
        if defer:
            assert eng.catch_up_pending
            assert [c.kind for c in eng.timeline()] == ["baseline", "manual", "manual"]  # nothing yet
        result = ACTIONS[action](eng, first)
        assert not eng.catch_up_pending
        return result, _shape(eng)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_first_action_after_a_deferred_open_sees_the_external_change_first(
    tmp_path: Path, action: str
) -> None:
    if action == "catch_up":
        # An ordinary open has nothing left to catch up: only the store's shape must match.
        _, deferred = _run(tmp_path / "d", action, defer=True)
        _, plain = _run(tmp_path / "p", "unrecorded_changes", defer=False)
        assert deferred == plain
        return
    res_d, deferred = _run(tmp_path / "d", action, defer=True)
    res_p, plain = _run(tmp_path / "p", action, defer=False)
    if not action.startswith(("checkpoint", "record", "safety")):
        assert res_d == res_p
    assert deferred == plain
    external = [s for s in deferred if s[0] == "external"]
    assert external[0][2] == ["a.txt", "keep.txt", "new/c.txt"]
    assert deferred[3][0] == "external" and deferred[3][3]  # right after the head it was made on


def test_the_external_checkpoint_holds_what_was_on_disk_and_restores_it(ws: Path, store: Path) -> None:
    first = _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True) as eng:
        out = eng.restore(first, force=True)
        assert out.kind == "applied"
        ext = next(c for c in eng.timeline() if c.kind == "external")
        assert out.checkpoint is not None and out.checkpoint.parent == ext.id
        assert eng.file_content(ext.id, "a.txt") == b"changed while closed\n"
        assert eng.file_content(ext.id, "keep.txt") is None
        assert (ws / "a.txt").read_text() == "two\n"
        eng.restore(ext.id, force=True)
        assert (ws / "a.txt").read_text() == "changed while closed\n"
        assert (ws / "new" / "c.txt").read_text() == "sea\n"


def test_a_change_after_the_deferred_open_is_still_caught(ws: Path, store: Path) -> None:
    _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True) as eng:
        write(ws, "late.txt", "late\n")  # before the catch-up walk: the walk sees it
        cp = eng.catch_up()
        assert cp is not None and cp.kind == "external"
        assert "late.txt" in {f.path for f in cp.files}
        assert eng.catch_up() is None  # nothing pending any more
        write(ws, "later.txt", "later\n")  # after it: the watcher (or the next walk) sees it
        shell = eng.checkpoint("shell")
        assert [f.path for f in shell.files] == ["later.txt"]


def test_a_failed_catch_up_stays_pending_and_blocks_the_commit(
    ws: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True) as eng:
        cap = eng.capturer
        assert cap is not None
        real = cap.detect
        calls = {"n": 0}

        def failing(*a: Any, **k: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 1:
                raise OSError(28, "No space left on device")
            return real(*a, **k)

        monkeypatch.setattr(cap, "detect", failing)
        with pytest.raises(OSError):
            eng.checkpoint("tool", ["a.txt"])
        assert eng.catch_up_pending
        assert [c.kind for c in eng.timeline()] == ["baseline", "manual", "manual"]  # nothing committed
        cp = eng.checkpoint("tool", ["a.txt"])
        kinds = [c.kind for c in eng.timeline()]
        assert kinds == ["baseline", "manual", "manual", "external", "manual"]
        assert cp.files == []  # a.txt changed while closed: the external checkpoint holds it
        assert "a.txt" in {f.path for f in eng.timeline()[3].files}


def test_closing_with_the_catch_up_pending_loses_nothing(ws: Path, store: Path) -> None:
    _history(ws, store)
    Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True).close()
    with Engine.open(ws, store, config=EngineConfig()) as eng:
        ext = [c for c in eng.timeline() if c.kind == "external"]
        assert len(ext) == 1 and sorted(f.path for f in ext[0].files) == ["a.txt", "keep.txt", "new/c.txt"]


def test_readers_need_no_catch_up_and_read_only_engines_have_none(ws: Path, store: Path) -> None:
    first = _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True) as eng:
        assert [c.kind for c in eng.timeline()] == ["baseline", "manual", "manual"]
        assert eng.file_content(first, "a.txt") == b"two\n"
        assert eng.diff(first, eng.head.id)
        assert eng.catch_up_pending  # reading did not need it
    with Engine.open(ws, store, readonly=True, defer_catch_up=True) as ro:
        assert not ro.catch_up_pending
        assert ro.catch_up() is None
        with pytest.raises(RetraceError):
            ro.checkpoint("x")


def test_a_fresh_store_takes_its_baseline_at_open(ws: Path, store: Path) -> None:
    write(ws, "a.txt", "one\n")
    with Engine.open(ws, store, config=EngineConfig(), defer_catch_up=True) as eng:
        assert not eng.catch_up_pending
        assert [c.kind for c in eng.timeline()] == ["baseline"]


def test_catch_up_false_still_hands_the_changes_to_the_caller(ws: Path, store: Path) -> None:
    _history(ws, store)
    with Engine.open(ws, store, config=EngineConfig(), catch_up=False, defer_catch_up=True) as eng:
        assert not eng.catch_up_pending
        cp = eng.checkpoint("cli")
        assert sorted(f.path for f in cp.files) == ["a.txt", "keep.txt", "new/c.txt"]
