"""Property over the real loop (engine, fake Messages API over HTTP, parallel children): however
the children's tool calls interleave (random stream delays), children that touch disjoint files
leave the parent's workspace exactly as applying their net changes one after another would, and
each ``task`` call's checkpoint holds exactly its own child's files."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.oracles import file_bytes

from retrace.agent.session import AgentService
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.offline import FakeModel, Scenario

from .conftest import RecordingHost, make_workspace, settings_for

pytestmark = pytest.mark.slow


FILES = ["README.md", "src/app.py", "src/util.py", "notes.txt", "new/a.txt", "new/b.txt"]
# One child: the files it writes (disjoint from the others'), its stream delay, its call count.
CHILD = st.tuples(st.integers(min_value=0, max_value=40), st.integers(min_value=1, max_value=2))


def _scenario(plan: list[tuple[list[str], int, int]]) -> list[dict[str, Any]]:
    tasks = [
        {"name": "task", "input": {"description": f"child {n}", "prompt": f"lane-{n}: write"}}
        for n in range(len(plan))
    ]
    responses: list[dict[str, Any]] = [{"toolCalls": tasks}, {"text": "all merged"}]
    for n, (paths, delay, calls) in enumerate(plan):
        for call in range(calls):
            writes = [
                {"name": "write_file", "input": {"path": p, "content": f"{p} by child {n} call {call}\n"}}
                for p in paths
            ]
            responses.append({"lane": f"lane-{n}:", "toolCalls": writes, "chunkDelayMs": delay})
        responses.append({"lane": f"lane-{n}:", "text": f"child {n} done", "chunkDelayMs": delay})
    return responses


async def _run(plan: list[tuple[list[str], int, int]], root: Path) -> None:
    ws = make_workspace(root)
    before = file_bytes(ws)
    engine = await asyncio.to_thread(Engine.open, ws, root / "store", config=EngineConfig(watcher=False))
    fake = FakeModel(Scenario.model_validate({"responses": _scenario(plan)}))
    fake.start()
    try:
        service = AgentService(engine, RecordingHost(), settings_for(fake, max_parallel_tasks=2))
        await service.load()
        sid, _ = await service.prompt("fan out")
        await asyncio.wait_for(service.wait_idle(sid), 120)
        expected = dict(before)
        for n, (paths, _delay, calls) in enumerate(plan):
            for p in paths:
                expected[p] = f"{p} by child {n} call {calls - 1}\n".encode()
        assert file_bytes(ws) == expected
        cps = [c for c in engine.timeline(sid) if c.kind == "tool"]
        assert [sorted(f.path for f in c.files) for c in cps] == [
            sorted(p for p in paths if expected[p] != before.get(p)) for paths, _, _ in plan
        ]
        assert all(c.meta["task"]["status"] == "merged" for c in cps)
    finally:
        fake.stop()
        engine.close()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    owners=st.lists(st.integers(min_value=0, max_value=2), min_size=len(FILES), max_size=len(FILES)),
    children=st.lists(CHILD, min_size=3, max_size=3),
)
def test_disjoint_children_in_any_interleaving_equal_their_sequential_application(
    owners: list[int], children: list[tuple[int, int]]
) -> None:
    plan = [([f for f, o in zip(FILES, owners, strict=True) if o == n], *children[n]) for n in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(plan, Path(tmp)))
