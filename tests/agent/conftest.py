"""Agent test harness: a real Engine on a temp workspace, the real fake model over HTTP, and a
host that records events and answers permission requests from a script."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.workspaces import project

from retrace.agent.notifications import PermissionDecision, PermissionRequest
from retrace.agent.permissions import PermissionSettings
from retrace.agent.runtime import ClientFactory
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.offline import FakeModel, Scenario

APP_PY = 'def main():\n    print("hello")\n\n\nif __name__ == "__main__":\n    main()\n'


@dataclass
class RecordingHost:
    events: list[Any] = field(default_factory=list)
    decisions: list[PermissionDecision] = field(default_factory=list)
    asked: list[PermissionRequest] = field(default_factory=list)
    dirty: set[str] = field(default_factory=set)
    state: dict[str, Any] = field(
        default_factory=lambda: {"activeEditor": "src/app.py", "openEditors": [{"path": "src/app.py"}]}
    )

    async def emit(self, event: Any) -> None:
        self.events.append(event)

    async def ask_permission(self, request: PermissionRequest) -> PermissionDecision:
        self.asked.append(request)
        return self.decisions.pop(0) if self.decisions else "deny"

    def editor_state(self) -> dict[str, Any] | None:
        return self.state

    def dirty_paths(self) -> set[str]:
        return set(self.dirty)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


@dataclass
class Harness:
    workspace: Path
    store: Path
    engine: Engine
    fake: FakeModel
    host: RecordingHost
    service: AgentService
    registry: list[Harness] = field(default_factory=list)

    async def turn(self, text: str, session_id: str | None = None) -> str:
        """Run one turn to its end; returns the session id."""
        sid, _ = await self.service.prompt(text, session_id)
        await asyncio.wait_for(self.service.wait_idle(sid), 60)
        return sid

    def stop_reasons(self) -> list[str]:
        return [e.stop_reason for e in self.host.of("turnFinished")]

    def reopen(self, responses: list[dict[str, Any]] | None = None) -> Harness:
        """Close everything and open a fresh engine + service on the same store (a restart)."""
        self.engine.close()
        engine = Engine.open(self.workspace, self.store, config=EngineConfig(watcher=False))
        host = RecordingHost()
        if responses is not None:
            self.fake.stop()
            self.fake = FakeModel(Scenario.model_validate({"responses": responses}))
            self.fake.start()
        service = AgentService(engine, host, settings_for(self.fake))
        again = Harness(self.workspace, self.store, engine, self.fake, host, service, self.registry)
        self.registry.append(again)
        return again


def unmarked(value: Any) -> Any:
    """A sent request part without its prompt-cache breakpoints (``cache_control``)."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def settings_for(fake: FakeModel, **changes: Any) -> AgentSettings:
    base = AgentSettings(
        model="claude-test-model",
        base_url=fake.base_url,
        permissions=PermissionSettings(write="auto", command="auto"),
        retry_base_delay_s=0.01,
        max_retries=3,
        command_timeout_s=20,
    )
    return AgentSettings.model_validate({**base.model_dump(), **changes})


def make_workspace(root: Path) -> Path:
    return project(
        root,
        "ws",
        {
            "README.md": "# Sample\n\nA sample project.\n",
            "src/app.py": APP_PY,
            "src/util.py": "def add(a, b):\n    return a + b\n",
            "notes.txt": "remember the milk\n",
        },
    )


HarnessFactory = Callable[..., Any]


@pytest.fixture
async def make_harness(tmp_path: Path) -> AsyncIterator[HarnessFactory]:
    made: list[Harness] = []

    async def make(
        responses: list[dict[str, Any]],
        *,
        source: Path | None = None,
        settings_of: Callable[[FakeModel], AgentSettings] | None = None,
        client_factory: ClientFactory | None = None,
        **settings: Any,
    ) -> Harness:
        """``source``: a folder copied as the workspace (default: a small sample project);
        ``settings_of``: the agent's settings for the fake model (default: :func:`settings_for`
        with ``settings``); ``client_factory``: the model client's (default: the service's)."""
        if source is not None:
            ws = tmp_path / "ws"
            shutil.copytree(source, ws)
        else:
            ws = make_workspace(tmp_path)
        store = tmp_path / "store"
        engine = await asyncio.to_thread(Engine.open, ws, store, config=EngineConfig(watcher=False))
        fake = FakeModel(Scenario.model_validate({"responses": responses}))
        fake.start()
        host = RecordingHost()
        agent = settings_of(fake) if settings_of is not None else settings_for(fake, **settings)
        service = AgentService(engine, host, agent, client_factory=client_factory)
        await service.load()
        harness = Harness(ws, store, engine, fake, host, service, made)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.fake.stop()
        harness.engine.close()
