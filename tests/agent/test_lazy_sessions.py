"""Start-up folds only the sessions whose journal changed since they were last found settled;
every other conversation is folded on first use, and no client can tell the difference: crash
resume still happens for a session a crash interrupted (however often it was settled before),
views and searches see every session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.conversation import Conversation
from retrace.agent.session import AgentService
from retrace.agent.session_index import FILE_NAME
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.engine.store.events import MessageEvent, ToolCallIntentEvent, ToolCallResultEvent, TurnEvent
from retrace.engine.store.layout import StoreLayout

from .conftest import Harness, HarnessFactory, RecordingHost, settings_for


def _turn(engine: Engine, sid: str, n: int, *, crash: bool) -> None:
    """One turn of session ``sid`` with one tool call; ``crash``: the journal ends inside it."""
    engine.new_session(sid)
    turn, prompt, reply, call = f"t{n}", f"m{n}p", f"m{n}a", f"toolu_{sid}_{n}"
    parent = None
    for event in reversed(list(engine.events(sid))):
        if isinstance(event, MessageEvent):
            parent = event.id
            break
    engine.append_event(TurnEvent(turn_id=turn, text=f"task {n} of {sid}"), session_id=sid)
    content: list[dict[str, Any]] = [{"type": "text", "text": f"task {n}"}]
    engine.append_event(
        MessageEvent(id=prompt, parent=parent, role="user", content=content, turn_id=turn, kind="prompt"),
        session_id=sid,
    )
    use = {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": "README.md"}}
    engine.append_event(
        MessageEvent(
            id=reply, parent=prompt, role="assistant", content=[use], turn_id=turn, kind="assistant"
        ),
        session_id=sid,
    )
    engine.append_event(
        ToolCallIntentEvent(
            id=call, tool="read_file", input={"path": "README.md"}, turn_id=turn, message_id=reply
        ),
        session_id=sid,
    )
    if crash:
        return
    engine.append_event(
        ToolCallResultEvent(id=call, tool="read_file", status="ok", output="# Sample"), session_id=sid
    )
    result = [{"type": "tool_result", "tool_use_id": call, "content": "# Sample"}]
    engine.append_event(
        MessageEvent(
            id=f"m{n}r", parent=reply, role="user", content=result, turn_id=turn, kind="toolResults"
        ),
        session_id=sid,
    )
    done = [{"type": "text", "text": "done"}]
    engine.append_event(
        MessageEvent(
            id=f"m{n}d", parent=f"m{n}r", role="assistant", content=done, turn_id=turn, kind="assistant"
        ),
        session_id=sid,
    )


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The session ids whose journal events get read (and so folded), in order."""
    seen: list[str] = []
    original = Engine.events

    def events(self: Engine, session_id: str | None = None) -> Iterator[dict[str, Any]]:
        seen.append(session_id or self.session_id)
        return original(self, session_id)

    monkeypatch.setattr(Engine, "events", events)
    yield seen


async def _restart(h: Harness) -> tuple[Harness, list[str]]:
    again = h.reopen()
    return again, await again.service.load()


async def test_settled_sessions_are_not_folded_but_a_crash_is_always_resumed(
    make_harness: HarnessFactory, folded: list[str]
) -> None:
    h = await make_harness([])
    for s in range(4):
        _turn(h.engine, f"ses_{s}", 1, crash=s == 2)
    h, interrupted = await _restart(h)
    assert interrupted == ["ses_2"]

    folded.clear()
    h, interrupted = await _restart(h)
    assert interrupted == []
    assert not [s for s in folded if s.startswith("ses_")]  # nothing changed: nothing folded

    _turn(h.engine, "ses_1", 2, crash=True)  # a settled session is interrupted by a later crash
    folded.clear()
    h, interrupted = await _restart(h)
    assert interrupted == ["ses_1"]
    assert [s for s in folded if s.startswith("ses_")] == ["ses_1"]
    statuses = [e.status for e in h.engine.events("ses_1") if isinstance(e, ToolCallResultEvent)]
    assert statuses == ["ok", "interrupted"]

    folded.clear()
    h, interrupted = await _restart(h)
    assert interrupted == []
    assert not [s for s in folded if s.startswith("ses_")]


async def test_a_lazily_folded_conversation_is_the_full_fold(make_harness: HarnessFactory) -> None:
    h = await make_harness([])
    for s in range(3):
        _turn(h.engine, f"ses_{s}", 1, crash=False)
        _turn(h.engine, f"ses_{s}", 2, crash=False)
    h, _ = await _restart(h)
    h, _ = await _restart(h)  # every session is settled now: none is folded on load
    view = await h.service.conversation("ses_1")
    assert view == Conversation.from_events("ses_1", h.engine.events("ses_1")).view()
    assert len(view.messages) == 8


async def test_searching_tool_calls_covers_unfolded_sessions(make_harness: HarnessFactory) -> None:
    h = await make_harness([])
    for s in range(3):
        _turn(h.engine, f"ses_{s}", 1, crash=False)
    h, _ = await _restart(h)
    h, _ = await _restart(h)
    found = await h.service.search_all_tool_calls(tool="read_file")
    assert sorted(c.session_id for c in found) == ["ses_0", "ses_1", "ses_2"]


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"version":1,"sessions":{"ses_0":{"stamp":[1]}}}'])
async def test_a_damaged_session_index_means_every_session_is_folded(
    make_harness: HarnessFactory, folded: list[str], damage: bytes
) -> None:
    h = await make_harness([])
    _turn(h.engine, "ses_0", 1, crash=False)
    h, _ = await _restart(h)
    _turn(h.engine, "ses_0", 2, crash=True)
    index = StoreLayout(h.store).cache / FILE_NAME
    assert index.exists()
    index.write_bytes(damage)
    folded.clear()
    h, interrupted = await _restart(h)
    assert interrupted == ["ses_0"]
    assert "ses_0" in folded


def test_the_index_lives_in_the_rebuildable_cache(tmp_path: Path) -> None:
    assert (StoreLayout(tmp_path).cache / FILE_NAME).parent == StoreLayout(tmp_path).cache


async def test_a_start_makes_no_model_client(make_harness: HarnessFactory) -> None:
    """Making the model client (importing the SDK) costs a start-up more than the rest of the
    agent's load: it is made for the first model call, not on start-up, even when a crash
    left a session to resume (that only writes journal lines)."""
    h = await make_harness([])
    for s in range(3):
        _turn(h.engine, f"ses_{s}", 1, crash=s == 1)
    made: list[AgentSettings] = []

    def factory(settings: AgentSettings) -> Any:
        made.append(settings)
        return object()

    async def start() -> list[str]:
        nonlocal h
        h = h.reopen()
        h.service = AgentService(h.engine, RecordingHost(), settings_for(h.fake), factory)
        return await h.service.load()

    assert await start() == ["ses_1"]  # a crash resumed
    assert await start() == []  # every session settled
    assert made == []
