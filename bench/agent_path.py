"""Per tool call, end to end inside the server: tool result → ``checkpointCreated`` sent.

Drives the real agent path (:class:`retrace.agent.session.AgentService`, the real tool-call code,
the real anthropic SDK) against the offline fake Messages API
(:class:`retrace.offline.FakeModel`) scripted to ask for ``edit_file`` calls on existing files.
Two timestamps per call, taken bench-side without touching production code: the moment the
tool's ``execute`` returns (the tool-call module's ``execute`` is wrapped for the duration of
the run) and the moment the host is handed the call's ``checkpointCreated`` event (a recording
``AgentHost``). The difference is everything the server does between a tool's result and the
client being told: journaling the result, the checkpoint, and the event. Also timed: a fresh
``AgentService`` loading every session in the store and answering its first timeline query (the
agent's share of a server start-up; the LSP server's own start-up is not included).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.tree import IgnoreRules, walk
from retrace.agent import tool_call
from retrace.agent.events import PermissionDecision, PermissionRequest
from retrace.agent.permissions import PermissionSettings
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.offline import FakeModel, Scenario

CALLS_PER_TURN = 40
"""Below the agent's per-turn model-call limit, so every scripted call runs."""


@dataclass
class TimingHost:
    """An :class:`AgentHost` that timestamps each tool checkpoint's ``checkpointCreated``."""

    created_ns: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    async def emit(self, event: Any) -> None:
        if event.kind == "checkpointCreated" and event.checkpoint.kind == "tool":
            self.created_ns.append(time.perf_counter_ns())
        elif event.kind == "agentError":
            self.errors.append(str(getattr(event, "message", event)))

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        return "allow"

    def editor_state(self) -> dict[str, Any] | None:
        return {"activeEditor": None, "openEditors": []}

    def dirty_paths(self) -> set[str]:
        return set()


def edit_calls(workspace: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` ``edit_file`` inputs, each replacing a line that occurs once in an existing file."""
    rng = random.Random(seed)
    files = sorted(rel for rel, st in walk(workspace, IgnoreRules.for_workspace(workspace)) if st.st_size > 0)
    rng.shuffle(files)
    calls: list[dict[str, Any]] = []
    for rel in files:
        if len(calls) == count:
            break
        try:
            text = (workspace / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        line = next((ln for ln in text.splitlines() if len(ln) > 8 and text.count(ln) == 1), None)
        if line is None:
            continue
        calls.append({"path": rel, "old_string": line, "new_string": f"{line}  # agent edit {len(calls)}"})
    return calls


def _scenario(calls: list[dict[str, Any]]) -> Scenario:
    responses: list[dict[str, Any]] = []
    for start in range(0, len(calls), CALLS_PER_TURN):
        for c in calls[start : start + CALLS_PER_TURN]:
            responses.append({"toolCalls": [{"name": "edit_file", "input": c}]})
        responses.append({"text": "done"})
    return Scenario.model_validate({"responses": responses})


async def _drive(engine: Engine, host: TimingHost, fake: FakeModel, turns: int) -> float:
    """Run the turns; returns the ms from a fresh service to its first timeline answer."""
    settings = AgentSettings(
        model="claude-test-model",
        base_url=fake.base_url,
        permissions=PermissionSettings(write="auto", command="auto"),
        retry_base_delay_s=0.01,
        max_retries=3,
    )
    t0 = time.perf_counter_ns()
    service = AgentService(engine, host, settings)
    await service.load()
    await service.gate.call(engine.timeline, engine.session_id)
    startup_ms = (time.perf_counter_ns() - t0) / 1e6
    sid: str | None = None
    for turn in range(turns):
        sid, _ = await service.prompt(f"make the next edits ({turn + 1}/{turns})", sid)
        await service.wait_idle(sid)
    return startup_ms


def measure_agent_path(engine: Engine, calls: int, seed: int) -> dict[str, Any]:
    """Run ``calls`` edit tool calls through the agent; per-call ms from tool result to event."""
    inputs = edit_calls(engine.workspace, calls, seed)
    host = TimingHost()
    done_ns: list[int] = []
    patched = vars(tool_call)  # the tool-call module's globals: its ``execute`` is wrapped
    real_execute: Callable[..., Awaitable[Any]] = patched["execute"]

    async def timed_execute(*args: Any, **kwargs: Any) -> Any:
        result = await real_execute(*args, **kwargs)
        done_ns.append(time.perf_counter_ns())
        return result

    fake = FakeModel(_scenario(inputs))
    fake.start()
    patched["execute"] = timed_execute
    t0 = time.perf_counter_ns()
    try:
        startup_ms = asyncio.run(_drive(engine, host, fake, -(-len(inputs) // CALLS_PER_TURN)))
    finally:
        patched["execute"] = real_execute
        fake.stop()
    wall_ms = (time.perf_counter_ns() - t0) / 1e6
    errors = list(host.errors)
    if len(done_ns) != len(host.created_ns):
        errors.append(f"{len(done_ns)} tool results but {len(host.created_ns)} checkpointCreated events")
    samples = [(c - d) / 1e6 for d, c in zip(done_ns, host.created_ns, strict=False)]
    return {
        "requested": len(inputs),
        "samples": samples,
        "wall_ms": wall_ms,
        "startup_ms": startup_ms,
        "errors": errors,
    }
