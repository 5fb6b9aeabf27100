"""The ``task`` tool over the real engine and the real fake Messages API (HTTP + SSE): parallel
children in isolated copies, merged into the parent as one checkpoint per call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from retrace.agent.subagents.layout import TaskPaths
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.gc import store_bytes
from retrace.engine.store.events import TaskEvent, event_json
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store_stats.store_figures import read_store_stats

from .conftest import Harness, HarnessFactory

pytestmark = pytest.mark.slow


UTIL = "def add(a, b):\n    return a + b\n"


def task(lane: str, description: str) -> dict[str, Any]:
    return {"name": "task", "input": {"description": description, "prompt": f"{lane}: do your part"}}


def child(lane: str, calls: list[dict[str, Any]], answer: str, delay_ms: float = 20) -> list[dict[str, Any]]:
    return [
        {"lane": lane, "toolCalls": calls, "chunkDelayMs": delay_ms},
        {"lane": lane, "text": answer, "chunkDelayMs": delay_ms},
    ]


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "input": {"path": path, "old_string": old, "new_string": new}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "input": {"path": path, "content": content}}


def task_events(h: Harness, sid: str) -> list[dict[str, Any]]:
    return [event_json(e) for e in h.engine.events(sid, only=(TaskEvent,))]


def results_text(h: Harness) -> dict[str, str]:
    return {e.tool_call_id: e.output for e in h.host.of("toolCallFinished")}


async def test_three_parallel_children_merge_disjoint_work_and_report_the_overlap(
    make_harness: HarnessFactory,
) -> None:
    responses = [
        {
            "toolCalls": [
                task("lane-A", "comment add"),
                task("lane-B", "write docs"),
                task("lane-C", "swap add"),
            ]
        },
        {"text": "all three came back"},
        *child("lane-A", [edit("src/util.py", "return a + b", "return a + b  # A")], "A: commented"),
        *child("lane-B", [write("docs/b.md", "# B\n")], "B: documented"),
        *child("lane-C", [edit("src/util.py", "return a + b", "return b + a")], "C: swapped"),
    ]
    h: Harness = await make_harness(responses)
    sid = await h.turn("split the work")
    assert h.stop_reasons() == ["end_turn"]

    # A and B merged; C's edit overlaps A's on the same line: reported, the file keeps A's.
    assert (h.workspace / "src/util.py").read_text() == "def add(a, b):\n    return a + b  # A\n"
    assert (h.workspace / "docs/b.md").read_text() == "# B\n"
    cps = [c for c in h.engine.timeline(sid) if c.kind == "tool"]
    assert [c.tool for c in cps] == ["task", "task", "task"]
    assert [[f.path for f in c.files] for c in cps] == [["src/util.py"], ["docs/b.md"], []]
    assert [c.meta["task"]["status"] for c in cps] == ["merged", "merged", "conflicts"]
    assert cps[2].meta["task"]["conflicts"][0]["path"] == "src/util.py"
    outputs = list(results_text(h).values())
    assert "CONFLICT, not merged: src/util.py" in outputs[2]
    assert "C: swapped" in outputs[2] and "A: commented" in outputs[0]

    # Each child has its own timeline in its own store, with its tool checkpoint.
    ends = [e for e in task_events(h, sid) if e["status"] != "running"]
    assert len(ends) == 3
    assert max(e["metrics"]["parallel"] for e in ends) >= 2
    for end, path in zip(ends, ["src/util.py", "docs/b.md", "src/util.py"], strict=True):
        paths = TaskPaths.from_rel(h.store, end["store"])
        with Engine.open(paths.work, paths.store, readonly=True, config=EngineConfig(watcher=False)) as eng:
            tools = [c for c in eng.timeline() if c.kind == "tool"]
            assert [[f.path for f in c.files] for c in tools] == [[path]]
    # The children's requests never reached the parent's conversation.
    view = await h.service.conversation(sid)
    assert [m.kind for m in view.messages] == ["prompt", "assistant", "toolResults", "assistant"]


async def test_a_failing_child_changes_nothing_here(make_harness: HarnessFactory) -> None:
    responses = [
        {"toolCalls": [task("lane-F", "break things")]},
        {"text": "it failed"},
        {"lane": "lane-F", "toolCalls": [write("src/util.py", "broken\n")]},
        {"lane": "lane-F", "status": 500, "times": 10, "text": "never"},
    ]
    h: Harness = await make_harness(responses, max_retries=1)
    sid = await h.turn("try")
    assert (h.workspace / "src/util.py").read_text() == UTIL
    cps = [c for c in h.engine.timeline(sid) if c.kind == "tool"]
    assert [c.files for c in cps] == [[]]
    assert cps[0].meta["task"]["status"] == "failed"
    finished = h.host.of("toolCallFinished")
    assert finished[0].status == "error"
    assert "nothing was merged" in finished[0].output
    assert [e["status"] for e in task_events(h, sid)] == ["running", "failed"]


async def test_restoring_the_parent_before_the_task_takes_the_merge_back_and_keeps_the_child(
    make_harness: HarnessFactory,
) -> None:
    responses = [
        {"toolCalls": [task("lane-R", "rewrite util")]},
        {"text": "done"},
        *child("lane-R", [write("src/util.py", "def add(a, b):\n    return b + a\n")], "R: rewrote"),
    ]
    h: Harness = await make_harness(responses)
    sid = await h.turn("go")
    cp = next(c for c in h.engine.timeline(sid) if c.tool == "task")
    assert (h.workspace / "src/util.py").read_text() != UTIL
    assert cp.parent is not None
    h.engine.restore(cp.parent)
    assert (h.workspace / "src/util.py").read_text() == UTIL
    paths = TaskPaths.from_rel(h.store, cp.meta["task"]["store"])
    assert paths.store.is_dir()
    assert (paths.work / "src/util.py").read_text() == "def add(a, b):\n    return b + a\n"


async def test_subagent_metrics_reach_the_store_statistics(make_harness: HarnessFactory) -> None:
    responses = [
        {"toolCalls": [task("lane-M1", "one"), task("lane-M2", "two")]},
        {"text": "done"},
        *child("lane-M1", [edit("src/util.py", "return a + b", "return a + b  # one")], "1"),
        *child("lane-M2", [edit("src/util.py", "return a + b", "return b + a")], "2"),
    ]
    h: Harness = await make_harness(responses)
    await h.turn("two at once")
    before = read_store_stats(StoreLayout(h.store), h.engine.blobs)
    sub = before.subagents
    assert sub.started == 2
    assert sub.by_status == {"merged": 1, "conflicts": 1}
    assert sub.conflicts == 1
    assert sub.max_parallel == 2
    assert sub.peak_rss_mib > 0
    assert sub.bytes > 0
    # The children's copies are not the store's size (retention must never drop the parent's
    # checkpoints to make room for them).
    children = sum(p.stat().st_size for p in (h.store / "tasks").rglob("*") if p.is_file())
    assert children > 0
    assert sub.bytes >= children
    everything = sum(p.stat().st_size for p in h.store.rglob("*") if p.is_file())
    assert store_bytes(StoreLayout(h.store)) <= everything - children  # what retention's quota counts
    assert before.total_bytes >= children  # the storage figure (the Health panel's) holds them


async def test_children_ask_through_the_parent_and_cannot_delegate(make_harness: HarnessFactory) -> None:
    responses = [
        {"toolCalls": [task("lane-P", "ask first")]},
        {"text": "done"},
        *child("lane-P", [write("asked.txt", "yes\n")], "P: wrote"),
    ]
    h: Harness = await make_harness(responses, permissions={"write": "ask", "command": "ask"})
    h.host.decisions = ["allow"]
    sid = await h.turn("go")
    [asked] = h.host.asked
    assert asked.session_id == sid
    assert asked.summary.startswith("[subagent: ask first]")
    assert (h.workspace / "asked.txt").read_text() == "yes\n"
    child_requests = [r for r in h.fake.requests if "lane-P" in str(r["messages"][0]["content"])]
    assert child_requests
    for request in child_requests:
        assert "task" not in [t["name"] for t in request["tools"]]
    parent = [r for r in h.fake.requests if r not in child_requests]
    assert "task" in [t["name"] for t in parent[0]["tools"]]


async def test_cancelling_the_turn_cancels_its_children_and_changes_nothing(
    make_harness: HarnessFactory,
) -> None:
    responses = [
        {"toolCalls": [task("lane-X", "slow")]},
        {"lane": "lane-X", "toolCalls": [write("slow.txt", "1\n")]},
        {"lane": "lane-X", "toolCalls": [{"name": "run_command", "input": {"command": "sleep 30"}}]},
        {"lane": "lane-X", "text": "never"},
    ]
    h: Harness = await make_harness(responses)
    sid, _ = await h.service.prompt("go")
    for _ in range(400):
        if any(e.kind == "taskProgress" and e.tool_calls >= 1 for e in h.host.events):
            break
        await asyncio.sleep(0.05)
    assert await h.service.cancel(sid)
    assert not (h.workspace / "slow.txt").exists()
    assert [e["status"] for e in task_events(h, sid)] == ["running", "cancelled"]
    [cp] = [c for c in h.engine.timeline(sid) if c.kind == "tool"]
    assert cp.tool == "task" and cp.files == []
    assert h.stop_reasons() == ["cancelled"]
