"""The fake Messages API against the real anthropic SDK, over real HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import AsyncAnthropic

from retrace.bootstrap import DEMO_MARKER, ModelEndpoint, start_offline_model, stop_offline_models
from retrace.offline import (
    FINISHED_TEXT,
    FakeModel,
    Scenario,
    ScenarioError,
    load_scenario,
)

TOOLS = [
    {
        "name": "write_file",
        "description": "write a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def scenario(*responses: dict[str, Any]) -> Scenario:
    return Scenario.model_validate({"responses": list(responses)})


@pytest.fixture
def fake_factory() -> Iterator[Any]:
    started: list[FakeModel] = []

    def make(*responses: dict[str, Any]) -> FakeModel:
        fake = FakeModel(scenario(*responses))
        fake.start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()


def client(fake: FakeModel, retries: int = 0) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=fake.base_url, api_key="test-key", max_retries=retries)


def post(url: str, body: Any, raw: bytes | None = None) -> tuple[int, Any]:
    """POST without the SDK (to send what the SDK never would)."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + "/v1/messages", data=data, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_streaming_text_and_tool_calls_parse_in_the_sdk(fake_factory: Any) -> None:
    fake = fake_factory(
        {
            "text": "I will write a file now, in several chunks of streamed text.",
            "toolCalls": [{"name": "write_file", "input": {"path": "a.txt", "content": "x" * 50}}],
        }
    )
    deltas: list[str] = []
    async with client(fake).messages.stream(
        model="claude-test", max_tokens=100, messages=user("hi"), tools=TOOLS
    ) as stream:
        async for event in stream:
            if event.type == "text":
                deltas.append(event.text)
        message = await stream.get_final_message()
    assert len(deltas) > 2
    assert "".join(deltas) == "I will write a file now, in several chunks of streamed text."
    assert message.stop_reason == "tool_use"
    tool = message.content[1]
    assert tool.type == "tool_use"
    assert tool.name == "write_file"
    assert tool.input == {"path": "a.txt", "content": "x" * 50}
    assert tool.id.startswith("toolu_")
    assert message.usage.output_tokens > 0
    assert fake.requests[0]["messages"] == user("hi")


async def test_non_streaming_reply_and_scenario_end(fake_factory: Any) -> None:
    fake = fake_factory({"text": "first"})
    c = client(fake)
    first = await c.messages.create(model="m", max_tokens=10, messages=user("a"))
    assert first.content[0].type == "text"
    assert first.content[0].text == "first"
    assert first.stop_reason == "end_turn"
    after = await c.messages.create(model="m", max_tokens=10, messages=user("b"))
    assert after.content[0].type == "text"
    assert after.content[0].text == FINISHED_TEXT
    assert len(fake.requests) == 2


async def test_match_branches_on_user_text_and_tool_result(fake_factory: Any) -> None:
    fake = fake_factory(
        {"match": {"lastUserTextContains": "banana"}, "text": "skipped"},
        {"match": {"toolResultIsError": True}, "text": "saw an error"},
        {"text": "fallback"},
    )
    c = client(fake)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "apple"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "write_file", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}],
        },
    ]
    reply = await c.messages.create(model="m", max_tokens=10, messages=history, tools=TOOLS)  # type: ignore[arg-type]
    assert reply.content[0].type == "text"
    assert reply.content[0].text == "saw an error"


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "assistant", "content": "x"}], "starting with 'user'"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "alternate"),
        ([{"role": "user", "content": []}], "non-empty"),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
                },
                {"role": "user", "content": "no result"},
            ],
            "without `tool_result`",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}]}],
            "unexpected `tool_use_id`",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi"}, {"type": "tool_result", "tool_use_id": "t1"}],
                },
            ],
            "must come first",
        ),
    ],
)
async def test_invalid_conversations_get_400(fake_factory: Any, messages: Any, needle: str) -> None:
    fake = fake_factory({"text": "never"})
    with pytest.raises(anthropic.BadRequestError) as info:
        await client(fake).messages.create(model="m", max_tokens=10, messages=messages)
    assert info.value.status_code == 400
    body = info.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert needle in body["error"]["message"]
    assert fake.statuses == [400]


async def test_missing_max_tokens_and_bad_tools_get_400(fake_factory: Any) -> None:
    fake = fake_factory({"text": "never"})
    status, body = post(fake.base_url, {"model": "m", "messages": user("a")})
    assert status == 400
    assert "max_tokens" in body["error"]["message"]
    bad_tools = [{"name": "bad name!", "input_schema": {"type": "object"}}]
    status, body = post(
        fake.base_url, {"model": "m", "max_tokens": 5, "messages": user("a"), "tools": bad_tools}
    )
    assert status == 400
    assert "tools.0.name" in body["error"]["message"]
    no_schema = [{"name": "ok", "input_schema": {"type": "string"}}]
    status, body = post(
        fake.base_url, {"model": "m", "max_tokens": 5, "messages": user("a"), "tools": no_schema}
    )
    assert status == 400
    assert "input_schema" in body["error"]["message"]
    status, body = post(fake.base_url, None, raw=b"{nope")
    assert status == 400
    assert len(fake.requests) == 3  # every parsed request is recorded; unparsable bodies are not


@pytest.mark.parametrize(
    ("status", "error_cls"), [(429, anthropic.RateLimitError), (529, anthropic.APIStatusError)]
)
async def test_status_faults_then_success(fake_factory: Any, status: int, error_cls: type[Exception]) -> None:
    fake = fake_factory({"status": status, "times": 2, "text": "finally"})
    c = client(fake)
    for _ in range(2):
        with pytest.raises(error_cls) as info:
            await c.messages.create(model="m", max_tokens=10, messages=user("a"))
        assert getattr(info.value, "status_code", None) == status
    reply = await c.messages.create(model="m", max_tokens=10, messages=user("a"))
    assert reply.content[0].type == "text"
    assert reply.content[0].text == "finally"
    assert fake.statuses == [status, status, 200]


async def test_sdk_own_retries_get_through(fake_factory: Any) -> None:
    fake = fake_factory({"status": 500, "times": 1, "text": "after retry"})
    reply = await client(fake, retries=2).messages.create(model="m", max_tokens=10, messages=user("a"))
    assert reply.content[0].type == "text"
    assert reply.content[0].text == "after retry"
    assert fake.statuses == [500, 200]


async def test_overloaded_error_shape(fake_factory: Any) -> None:
    fake = fake_factory({"status": 529, "text": "x"})
    status, body = post(fake.base_url, {"model": "m", "max_tokens": 5, "messages": user("a")})
    assert status == 529
    assert body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


async def _consume(fake: FakeModel) -> Any:
    async with client(fake).messages.stream(
        model="m", max_tokens=10, messages=user("a"), tools=TOOLS
    ) as stream:
        async for _ in stream:
            pass
        return await stream.get_final_message()


async def test_truncated_stream_fails_in_the_sdk(fake_factory: Any) -> None:
    fake = fake_factory({"truncateStream": True, "text": "a long text that will be cut off " * 3})
    with pytest.raises((httpx2.HTTPError, anthropic.APIError)):
        await _consume(fake)


async def test_malformed_event_fails_in_the_sdk(fake_factory: Any) -> None:
    fake = fake_factory({"malformedEvent": True, "text": "some text before the garbage arrives"})
    with pytest.raises(ValueError):  # json.JSONDecodeError
        await _consume(fake)


async def test_invalid_tool_json_fails_in_the_sdk(fake_factory: Any) -> None:
    fake = fake_factory(
        {"invalidToolJson": True, "toolCalls": [{"name": "write_file", "input": {"path": "a"}}]}
    )
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        await _consume(fake)


async def test_refusal_stop_reason(fake_factory: Any) -> None:
    fake = fake_factory({"refusal": True, "text": "I can't help with that."})
    message = await _consume(fake)
    assert message.stop_reason == "refusal"


def test_scenarios_load_and_reject_bad_files(tmp_path: Path) -> None:
    for name in ("demo", "e2e"):
        loaded = load_scenario(name)
        assert loaded.responses
        assert loaded.comment
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"responses": [{"status": 418}]}))
    with pytest.raises(ScenarioError, match=r"responses\.0\.status"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'"):
        load_scenario("nope")


def test_offline_model_is_chosen_only_in_a_demo_folder_with_no_endpoint(tmp_path: Path) -> None:
    real = tmp_path / "project"
    demo = tmp_path / "demo"
    real.mkdir()
    demo.mkdir()
    (demo / DEMO_MARKER).write_text("{}")
    nothing = ModelEndpoint.from_environment({})
    assert nothing.offline_scenario(None, demo) == "demo"
    assert nothing.model_mode(None, demo) == "demo"
    # A real folder without a key gets no model: the demo never edits real work.
    assert nothing.offline_scenario(None, real) is None
    assert nothing.offline_scenario(None) is None
    assert nothing.model_mode(None, real) == "noKey"
    configured = ({"ANTHROPIC_API_KEY": "k"}, {"ANTHROPIC_BASE_URL": "http://x"})
    configured += ({"ANTHROPIC_AUTH_TOKEN": "t"},)
    for env in configured:
        endpoint = ModelEndpoint.from_environment(env)
        assert endpoint.offline_scenario(None, demo) is None
        assert endpoint.model_mode(None, real) == "live"
    assert nothing.offline_scenario("http://configured", demo) is None
    assert nothing.model_mode("http://configured", real) == "live"
    forced = ModelEndpoint.from_environment({"RETRACE_FAKE_MODEL": "e2e", "ANTHROPIC_API_KEY": "sk"})
    assert forced.offline_scenario("http://configured", real) == "e2e"
    assert forced.model_mode("http://configured", real) == "demo"


def test_start_offline_model() -> None:
    stop_offline_models()
    url = start_offline_model("e2e")
    assert url.startswith("http://127.0.0.1:")
    status, _ = post(url, {"model": "m", "max_tokens": 5, "messages": user("a")})
    assert status == 200
    assert start_offline_model("e2e") == url
    stop_offline_models()
    with pytest.raises(urllib.error.URLError):
        post(url, {"model": "m", "max_tokens": 5, "messages": user("a")})
    demo = start_offline_model("demo")
    _, body = post(demo, {"model": "m", "max_tokens": 5, "messages": user("a")})
    assert body["content"][1]["name"] == "list_files"
    stop_offline_models()


def test_module_main_prints_base_url() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "retrace.offline", "--scenario", "e2e"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        status, body = post(url, {"model": "m", "max_tokens": 5, "messages": user("go")})
        assert status == 200
        assert body["content"][1]["name"] == "write_file"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [sys.executable, "-m", "retrace.offline", "--scenario", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: unknown scenario")
