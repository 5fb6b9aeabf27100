"""The agent through an OpenAI-compatible endpoint, end to end: the real AgentService and engine,
the client ``make_client`` builds for ``retrace.model.provider = "openai-compatible"`` (the real
``openai`` SDK), and the fake model's chat completions over real HTTP, which validates every
request like the real API (a 400 for an invalid history). Checkpoints, restores and the journal
are the same as with the Anthropic API; only the wire differs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.model.interface import ModelClient
from retrace.agent.model.providers import make_client
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.offline import FakeModel, Scenario

from .conftest import APP_PY, Harness, HarnessFactory, RecordingHost, make_workspace, settings_for
from .test_agent_loop import e2e_responses, tool_checkpoints

MODEL = "qwen2.5-coder:test"


def openai_settings(fake: FakeModel, **changes: Any) -> AgentSettings:
    access = {
        "provider": "openai-compatible",
        "id": MODEL,
        "openaiCompatible": {"baseUrl": f"{fake.base_url}/v1"},
    }
    return settings_for(fake, model=MODEL, access=access, base_url=None, **changes)


def client_factory(settings: AgentSettings) -> ModelClient:
    def no_anthropic() -> ModelClient:
        raise AssertionError("the Anthropic client must not be made for openai-compatible")

    return make_client(settings.access, anthropic=no_anthropic, editor_models=None)


@pytest.fixture
def make_oa(make_harness: HarnessFactory) -> HarnessFactory:
    """The shared harness (``conftest.make_harness``) with the openai-compatible provider."""

    async def make(responses: list[dict[str, Any]], **settings: Any) -> Harness:
        harness: Harness = await make_harness(
            responses,
            settings_of=lambda fake: openai_settings(fake, **settings),
            client_factory=client_factory,
        )
        return harness

    return make


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_a_turn_with_tools_ends_in_checkpoints_through_chat_completions(make_oa: Any) -> None:
    h: Harness = await make_oa(e2e_responses())
    sid = await h.turn("do the e2e thing")
    assert h.stop_reasons() == ["end_turn"]
    assert (h.workspace / "hello.txt").read_text() == "Hello from Retrace\n"
    assert (h.workspace / "src/app.py").read_text() == "# Touched by the Retrace e2e scenario.\n" + APP_PY
    assert [c.tool for c in tool_checkpoints(h, sid)] == ["write_file", "edit_file", "run_command"]
    assert set(h.fake.wires) == {"chat"} and h.fake.statuses == [200, 200, 200]

    first, second, third = h.fake.requests
    assert first["model"] == MODEL and first["stream"] is True
    assert first["stream_options"] == {"include_usage": True}
    assert first["messages"][0]["role"] == "system" and first["messages"][-1] == {
        "role": "user",
        "content": "do the e2e thing",
    }
    assert {t["function"]["name"] for t in first["tools"]} >= {"write_file", "edit_file", "run_command"}
    assert "cache_control" not in json.dumps(h.fake.requests), "no prompt-cache breakpoint on this provider"
    # The batch of two calls is answered by two tool messages with the ids the endpoint gave.
    (batch,) = [
        m for m in third["messages"] if m["role"] == "assistant" and len(m.get("tool_calls", [])) == 2
    ]
    assert [m["tool_call_id"] for m in tool_messages(third)[1:]] == [c["id"] for c in batch["tool_calls"]]
    assert tool_messages(third)[1]["content"].startswith("Edited src/app.py")
    del second

    # The journal holds the agent's one form (Messages blocks) whatever the wire.
    view = await h.service.conversation(sid)
    uses = [b for m in view.messages for b in m.content if b.get("type") == "tool_use"]
    assert [u["name"] for u in uses] == ["write_file", "edit_file", "run_command"]
    assert all(u["id"].startswith("call_") for u in uses)
    # No price is known: the cost says unknown, never a made-up figure.
    usage = h.host.of("usage")
    assert usage and all(u.cost_unknown for u in usage) and usage[-1].total_output_tokens > 0


async def test_restore_both_then_the_next_request_is_valid(make_oa: Any) -> None:
    after = {"match": {"lastUserTextContains": "after restore"}, "text": "noted"}
    h: Harness = await make_oa([*e2e_responses()[:3], after, after])
    sid = await h.turn("prompt one")
    write_cp, edit_cp, run_cp = tool_checkpoints(h, sid)

    # The middle of a batch: conversation only; the later call is answered "not run: restored".
    await h.service.restore_conversation(sid, edit_cp.id)
    await h.turn("after restore 1", sid)
    assert h.fake.statuses[-1] == 200, h.fake.requests[-1]
    sent = h.fake.requests[-1]["messages"]
    assert [m["role"] for m in sent[-3:]] == ["tool", "tool", "user"]
    assert "restored to checkpoint" in sent[-1]["content"] and sent[-1]["content"].endswith("after restore 1")

    # Both (code and conversation) to the first tool checkpoint: files back, history cut after it.
    assert h.engine.restore(write_cp.id, mode="both").kind == "applied"
    await h.service.restore_conversation(sid, write_cp.id)
    assert not (h.workspace / "generated/out.txt").exists()
    await h.turn("after restore 2", sid)
    assert h.fake.statuses[-1] == 200, h.fake.requests[-1]
    sent = h.fake.requests[-1]["messages"]
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "user"]
    assert sent[-1]["content"] == "after restore 2"
    assert h.stop_reasons() == ["end_turn"] * 3
    del run_cp


async def test_faults_are_retried_or_fail_cleanly(make_oa: Any) -> None:
    write = {"name": "write_file", "input": {"path": "partial.txt", "content": "never"}}
    h: Harness = await make_oa(
        [
            {"status": 429, "times": 1, "retryAfterMs": "5", "text": "after the limit"},
            {
                "match": {"lastUserTextContains": "cut"},
                "truncateStream": True,
                "text": "Writing it now, promise.",
                "toolCalls": [write],
            },
            {"match": {"lastUserTextContains": "json"}, "invalidToolJson": True, "toolCalls": [write]},
            {
                "match": {"lastUserTextContains": "garbage"},
                "malformedEvent": True,
                "text": "Some text first, then.",
                "toolCalls": [write],
            },
            {"text": "recovered"},
        ]
    )
    sid = await h.turn("hi")
    errors = h.host.of("error")
    assert [e.retrying for e in errors] == [True]
    assert errors[0].message.startswith("429 ") and "retrying in 0.005s" in errors[0].message
    for prompt in ("cut it", "bad json", "garbage"):
        await h.turn(prompt, sid)
        last = h.host.of("error")[-1]
        assert not last.retrying, last.message
    assert h.stop_reasons() == ["end_turn", "error", "error", "error"]
    assert h.host.of("toolCallStarted") == [] and not (h.workspace / "partial.txt").exists()
    await h.turn("once more", sid)
    assert h.fake.statuses[-1] == 200 and h.stop_reasons()[-1] == "end_turn"
    assert h.fake.requests[-1]["messages"][1:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "after the limit"},
        {"role": "user", "content": "once more"},
    ]


async def test_a_summary_is_asked_without_streaming(make_oa: Any) -> None:
    summary = {"text": "SUMMARY: created hello.txt and annotated src/app.py."}
    h: Harness = await make_oa([*e2e_responses()[:3], summary])
    sid = await h.turn("prompt one")
    _, edit_cp, _ = tool_checkpoints(h, sid)
    cp = await h.service.summarize(edit_cp.id, "upTo")
    assert cp.kind == "summary"
    request = h.fake.requests[-1]
    assert h.fake.wires[-1] == "chat" and "stream" not in request and "tools" not in request
    assert "hello.txt" in request["messages"][-1]["content"]
    view = await h.service.conversation(sid)
    assert "SUMMARY: created hello.txt" in view.messages[0].content[0]["text"]


async def test_an_endpoint_that_is_not_running_names_the_setting(tmp_path: Path) -> None:
    fake = FakeModel(Scenario())
    fake.start()
    url = fake.base_url
    fake.stop()  # nothing listens there now
    ws = make_workspace(tmp_path)
    engine = await asyncio.to_thread(Engine.open, ws, tmp_path / "store", config=EngineConfig(watcher=False))
    try:
        host = RecordingHost()
        access = {"provider": "openai-compatible", "id": MODEL, "openaiCompatible": {"baseUrl": f"{url}/v1"}}
        settings = AgentSettings.model_validate(
            {"model": MODEL, "access": access, "maxRetries": 1, "retryBaseDelayS": 0.01}
        )
        service = AgentService(engine, host, settings, client_factory=client_factory)
        await service.load()
        sid, _ = await service.prompt("hello")
        await asyncio.wait_for(service.wait_idle(sid), 60)
        errors = host.of("error")
        assert [e.retrying for e in errors] == [True, False]
        assert "retrace.model.openaiCompatible.baseUrl" in errors[-1].message
        assert f"{url}/v1" in errors[-1].message
    finally:
        engine.close()


async def test_subagents_answer_through_the_same_endpoint(make_oa: Any) -> None:
    def task(lane: str) -> dict[str, Any]:
        return {"name": "task", "input": {"description": lane, "prompt": f"{lane}: do your part"}}

    def write(path: str) -> dict[str, Any]:
        return {"name": "write_file", "input": {"path": path, "content": f"{path}\n"}}

    h: Harness = await make_oa(
        [
            {"toolCalls": [task("lane-A"), task("lane-B")]},
            {"text": "both came back"},
            {"lane": "lane-A", "toolCalls": [write("docs/a.md")], "chunkDelayMs": 5},
            {"lane": "lane-A", "text": "A done", "chunkDelayMs": 5},
            {"lane": "lane-B", "toolCalls": [write("docs/b.md")], "chunkDelayMs": 5},
            {"lane": "lane-B", "text": "B done", "chunkDelayMs": 5},
        ]
    )
    sid = await h.turn("split the work")
    assert h.stop_reasons() == ["end_turn"]
    assert (h.workspace / "docs/a.md").read_text() == "docs/a.md\n"
    assert (h.workspace / "docs/b.md").read_text() == "docs/b.md\n"
    assert [c.meta["task"]["status"] for c in tool_checkpoints(h, sid)] == ["merged", "merged"]
    assert set(h.fake.wires) == {"chat"} and set(h.fake.statuses) == {200}


async def test_a_cancel_mid_stream_and_an_empty_reply_leave_a_valid_history(make_oa: Any) -> None:
    h: Harness = await make_oa(
        [
            {"text": "thinking very slowly " * 40, "chunkDelayMs": 30},
            {"match": {"lastUserTextContains": "second"}, "text": ""},
            {"match": {"lastUserTextContains": "third"}, "text": "ok"},
        ]
    )
    sid, _ = await h.service.prompt("first, to be cancelled")
    for _ in range(200):
        if h.host.of("textDelta"):
            break
        await asyncio.sleep(0.02)
    assert await h.service.cancel(sid)
    await h.turn("second: say nothing", sid)
    await h.turn("third", sid)
    assert h.stop_reasons() == ["cancelled", "end_turn", "end_turn"]
    assert h.fake.statuses[-2:] == [200, 200]
    users = [m["content"] for m in h.fake.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-1] == "third" and "first, to be cancelled" not in users
