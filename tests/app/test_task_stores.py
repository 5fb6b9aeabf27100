"""Subagent stores in retention (:mod:`retrace.app.task_stores`): the pure "still needed" rule,
table-tested, then real stores on a real file system: old finished children dropped whole, kept
children collected inside, and forged entries (a link named like a task folder pointing outside,
a file, an unknown folder, a damaged child store) reported and skipped — never followed, never
deleted outside the store."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from retrace.app.task_stores import DROP_PREFIX, collect_tasks, decide, due, remove
from retrace.engine import Engine
from retrace.engine.config import EngineConfig, RetentionPolicy
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import TaskEvent
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.task_dirs import TaskDir, scan, tasks_bytes

DAY = 86400.0
NOW = 1_800_000_000.0


def ev(
    task: str, status: str, *, age_days: float, base: str | None = "cp-gone", call: str = "call-gone"
) -> TaskEvent:
    return TaskEvent(task_id=task, call_id=call, status=status, base=base, ts=NOW - age_days * DAY)  # type: ignore[arg-type]


CASES = [
    # (entry, last task event, live parent points, verdict, why contains)
    (TaskDir("t1", "link"), ev("t1", "merged", age_days=99), set(), "skip", "link"),
    (TaskDir("t1", "file"), ev("t1", "merged", age_days=99), set(), "skip", "not a folder"),
    (TaskDir("t1", "other"), None, set(), "skip", "not a folder"),
    (TaskDir(DROP_PREFIX + "t1", "dir"), None, set(), "drop", "interrupted drop"),
    (TaskDir("t1", "dir"), None, set(), "skip", "no journal"),
    (TaskDir("t1", "dir"), ev("t1", "running", age_days=400), set(), "keep", "running"),
    (TaskDir("t1", "dir"), ev("t1", "merged", age_days=99, base="cp1"), {"cp1"}, "keep", "point at it"),
    (TaskDir("t1", "dir"), ev("t1", "failed", age_days=99, call="c1"), {"c1"}, "keep", "point at it"),
    (TaskDir("t1", "dir"), ev("t1", "merged", age_days=29), set(), "keep", "within"),
    (TaskDir("t1", "dir"), ev("t1", "interrupted", age_days=29.9), set(), "keep", "within"),
    (TaskDir("t1", "dir"), ev("t1", "merged", age_days=31), set(), "drop", "merged"),
    (TaskDir("t1", "dir"), ev("t1", "discarded", age_days=31), set(), "drop", "discarded"),
    (TaskDir("t1", "dir"), ev("t1", "conflicts", age_days=31, base=None), set(), "drop", "conflicts"),
    (TaskDir("t1", "dir"), ev("t1", "finished", age_days=31), {"other"}, "drop", "finished"),
]


@pytest.mark.parametrize(("entry", "task", "live", "verdict", "why"), CASES)
def test_still_needed_rule(
    entry: TaskDir, task: TaskEvent | None, live: set[str], verdict: str, why: str
) -> None:
    tasks = {} if task is None else {task.task_id: task}
    [d] = decide([entry], tasks, live, now=NOW, max_age_days=30)
    assert (d.verdict, d.name) == (verdict, entry.name)
    assert why in d.why, d.why


def test_the_task_id_of_an_event_never_names_a_folder() -> None:
    """Only folders listed in tasks/ are judged; an event naming ``..`` judges nothing."""
    tasks = {"..": ev("..", "merged", age_days=99)}
    assert decide([TaskDir("t1", "dir")], tasks, set(), now=NOW, max_age_days=30)[0].verdict == "skip"


# --------------------------------------------------------------------------- real stores


@pytest.fixture
def parent(tmp_path: Path) -> Engine:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    engine = Engine.open(ws, tmp_path / "store", create=True, config=EngineConfig(watcher=False))
    yield engine
    engine.close()


def child_store(engine: Engine, task: str, checkpoints: int = 1) -> Path:
    root = StoreLayout(engine.store_dir).tasks / task
    work = root / "work"
    work.mkdir(parents=True)
    (work / "a.txt").write_text("a\n")
    with Engine.open(work, root / "store", create=True, config=EngineConfig(watcher=False)) as child:
        for i in range(checkpoints):
            (work / "a.txt").write_text(f"v{i}\n")
            child.checkpoint(f"child {i}", changed_paths=["a.txt"], kind="tool")
    return root


def journal_task(engine: Engine, task: str, status: str, *, age_days: float, base: str | None = None) -> None:
    event = TaskEvent(
        task_id=task,
        call_id=f"call-{task}",
        status=status,  # type: ignore[arg-type]
        store=f"tasks/{task}/store",
        base=base,
        ts=time.time() - age_days * DAY,
    )
    engine.append_event(event)


def test_old_finished_children_dropped_needed_ones_kept_forged_ones_skipped(
    parent: Engine, tmp_path: Path
) -> None:
    old = child_store(parent, "task-old")
    recent = child_store(parent, "task-recent")
    running = child_store(parent, "task-running")
    pinned = child_store(parent, "task-pinned")
    journal_task(parent, "task-old", "running", age_days=40)
    journal_task(parent, "task-old", "merged", age_days=40)
    journal_task(parent, "task-recent", "merged", age_days=2)
    journal_task(parent, "task-running", "running", age_days=400)
    journal_task(parent, "task-pinned", "merged", age_days=40, base=parent.head.id)

    # Forged entries: a link named like a task folder pointing outside the store, a file, a
    # folder no journal names, and a child whose journal is garbage.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n")
    tasks = StoreLayout(parent.store_dir).tasks
    os.symlink(outside, tasks / "task-link")
    journal_task(parent, "task-link", "merged", age_days=99)
    (tasks / "task-file").write_text("not a folder\n")
    journal_task(parent, "task-file", "merged", age_days=99)
    (tasks / "task-unknown").mkdir()
    damaged = child_store(parent, "task-damaged")
    journal_task(parent, "task-damaged", "merged", age_days=3)
    for journal in (damaged / "store").rglob("*.jsonl"):
        journal.write_bytes(b"{not json\n" + journal.read_bytes()[:7])

    assert due(parent)
    before = tasks_bytes(StoreLayout(parent.store_dir))
    report = collect_tasks(parent)

    assert report.dropped == ["task-old"]
    assert not old.exists() and recent.is_dir() and running.is_dir() and pinned.is_dir()
    assert report.bytes_freed > 0 and before > 0
    assert (outside / "precious.txt").read_text() == "keep me\n", "a link is never followed"
    assert (tasks / "task-link").is_symlink() and (tasks / "task-file").is_file()
    assert (tasks / "task-unknown").is_dir() and damaged.is_dir()
    notes = "\n".join(report.notes)
    for name in ("task-link", "task-file", "task-unknown", "task-damaged"):
        assert f"tasks/{name}" in notes, notes
    assert not due(parent)
    assert collect_tasks(parent).dropped == []  # idempotent


def test_a_link_is_never_counted_or_removed(parent: Engine, tmp_path: Path) -> None:
    outside = tmp_path / "big"
    outside.mkdir()
    (outside / "blob").write_bytes(b"x" * 100_000)
    tasks = StoreLayout(parent.store_dir).tasks
    tasks.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, tasks / "task-x")
    layout = StoreLayout(parent.store_dir)
    assert tasks_bytes(layout) == 0
    assert [(d.name, d.kind) for d in scan(layout)[0]] == [("task-x", "link")]
    with pytest.raises(RetraceError):
        remove(layout, "task-x")
    with pytest.raises(RetraceError):
        remove(layout, "..")
    assert (outside / "blob").exists()


def test_a_tasks_folder_that_is_a_link_is_never_entered(parent: Engine, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    (outside / "task-1" / "store").mkdir(parents=True)
    layout = StoreLayout(parent.store_dir)
    os.symlink(outside, layout.tasks)
    journal_task(parent, "task-1", "merged", age_days=99)
    report = collect_tasks(parent)
    assert report.dropped == [] and (outside / "task-1").is_dir()
    assert "not a folder" in "\n".join(report.notes)
    assert tasks_bytes(layout) == 0


def test_an_interrupted_drop_is_finished(parent: Engine) -> None:
    left = child_store(parent, DROP_PREFIX + "task-9")
    assert due(parent)
    assert collect_tasks(parent).dropped == [DROP_PREFIX + "task-9"]
    assert not left.exists()


def test_kept_children_are_collected_by_the_same_rules(parent: Engine) -> None:
    root = child_store(parent, "task-long", checkpoints=6)
    journal_task(parent, "task-long", "merged", age_days=1)
    parent.config.retention = RetentionPolicy(max_checkpoints=3)
    report = collect_tasks(parent)
    assert report.dropped == [] and report.checkpoints_dropped >= 3
    with Engine.open(root / "work", root / "store", readonly=True) as child:
        assert len(child.timeline()) <= 3


def test_storage_figure_counts_subagent_stores_not_links(parent: Engine, tmp_path: Path) -> None:
    from retrace.app.metrics.storage import alert_level
    from retrace.engine.store_stats.storage_usage import usage

    layout = StoreLayout(parent.store_dir)
    without = usage(layout)
    assert without.subagents == 0
    root = child_store(parent, "task-big")
    (root / "work" / "big.bin").write_bytes(b"x" * 200_000)
    outside = tmp_path / "outside-big"
    outside.mkdir()
    (outside / "huge.bin").write_bytes(b"y" * 1_000_000)
    os.symlink(outside, layout.tasks / "task-link")
    with_child = usage(layout)
    assert 200_000 <= with_child.subagents < 1_000_000, with_child
    assert with_child.by_kind()["subagents"] == with_child.subagents
    assert with_child.total == sum(with_child.by_kind().values())
    # The alert sees them: a budget the main store alone is far under, the subagent pushes over.
    budget = int(with_child.total / 0.95)
    assert alert_level(without.total, budget) == "ok"
    assert alert_level(with_child.total, budget) == "urgent"


def test_cli_gc_reports_subagent_stores(parent: Engine) -> None:
    """``retrace gc --json`` as a real subprocess: the dropped store and the skipped entries."""
    import json
    import subprocess
    import sys

    old = child_store(parent, "task-old")
    journal_task(parent, "task-old", "merged", age_days=60)
    (StoreLayout(parent.store_dir).tasks / "task-file").write_text("x")
    workspace, store = parent.workspace, parent.store_dir
    parent.close()
    retrace = Path(sys.executable).with_name("retrace")
    env = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}
    proc = subprocess.run(
        [str(retrace), "gc", "--json", "--workspace", str(workspace), "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    report = json.loads(proc.stdout)
    assert report["subagentStoresDropped"] == 1 and not old.exists()
    assert any("tasks/task-file" in n for n in report["notes"]), report
    text = subprocess.run(
        [str(retrace), "gc", "--workspace", str(workspace), "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    assert "Skipped tasks/task-file: not a folder" in text, text
