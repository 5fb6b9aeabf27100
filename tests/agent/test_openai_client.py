"""The OpenAI-compatible client at its edges: which client ``make_client`` builds (never raising),
the base URL's checks, the key (handed off, never a setting; a placeholder for a local endpoint),
how the SDK's failures are classified, and what the provider declares it lacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import httpx2
import openai
import pytest

from retrace.agent.model.interface import ModelError, ModelRequest, ReplyUsage
from retrace.agent.model.openai_compatible import (
    OpenAiCompatibleClient,
    openai_compatible_client,
    shown_url,
    status_error,
    url_problem,
)
from retrace.agent.model.providers import UnavailableClient, make_client
from retrace.agent.model.settings import ModelSettings
from retrace.offline import FakeModel, Scenario

SETTING = "retrace.model.openaiCompatible.baseUrl"


def access(base_url: str, model: str = "qwen") -> ModelSettings:
    return ModelSettings.model_validate(
        {"provider": "openai-compatible", "id": model, "openaiCompatible": {"baseUrl": base_url}}
    )


def build(settings: ModelSettings) -> Any:
    def no_anthropic() -> Any:
        raise AssertionError("not the Anthropic client")

    return make_client(settings, anthropic=no_anthropic, editor_models=None)


REQUEST = ModelRequest(model="qwen", max_tokens=16, system="s", messages=[{"role": "user", "content": "hi"}])


async def noop(_: str) -> None:
    return None


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("http://localhost:11434/v1", None),
        ("https://models.example.com/v1", None),
        ("http://[::1]:8000/v1", None),
        (" http://127.0.0.1:1234/v1 ", None),
        ("localhost:11434/v1", "must be an http:// or https:// URL"),
        ("ftp://host/v1", "must be an http:// or https:// URL"),
        ("http://", "must be an http:// or https:// URL"),
        ("http://host:port/v1", "is not a URL"),
        ("http://[::1/v1", "is not a URL"),
        ("http://local host/v1", "is not a URL"),
        ("http://host\t/v1", "is not a URL"),
    ],
)
def test_base_url_checks(base_url: str, problem: str | None) -> None:
    found = url_problem(base_url)
    if problem is None:
        assert found is None
        assert isinstance(build(access(base_url)), OpenAiCompatibleClient)
    else:
        assert found is not None and problem in found and SETTING in found
        client = build(access(base_url))
        assert isinstance(client, UnavailableClient) and client.message == found


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"provider": "openai-compatible", "id": "qwen"}, SETTING),
        (
            {"provider": "openai-compatible", "openaiCompatible": {"baseUrl": "http://h/v1"}},
            "retrace.model.id",
        ),
    ],
)
async def test_settings_that_cannot_make_a_request_fail_every_call_naming_the_setting(
    settings: dict[str, Any], named: str
) -> None:
    client = build(ModelSettings.model_validate(settings))
    assert isinstance(client, UnavailableClient)
    for call in (client.stream(REQUEST, noop), client.complete(REQUEST)):
        with pytest.raises(ModelError, match=named.replace(".", r"\.")) as caught:
            await call
        assert not caught.value.retryable


async def test_a_missing_openai_package_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now raises ImportError
    client = build(access("http://127.0.0.1:11434/v1"))
    assert isinstance(client, UnavailableClient)
    with pytest.raises(ModelError, match="the openai package is not installed"):
        await client.stream(REQUEST, noop)


def test_a_url_is_shown_without_its_credentials() -> None:
    assert shown_url("http://user:secret@host:8080/v1?key=k#x") == "http://host:8080/v1"
    assert shown_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert shown_url("http://127.0.0.1:0/v1") == "http://127.0.0.1:0/v1"


def test_what_the_provider_declares() -> None:
    client = openai_compatible_client(access("http://127.0.0.1:9/v1"), api_key="")
    assert client.provider == "openai-compatible"
    assert client.caching is False
    assert client.cost_usd("qwen", ReplyUsage(input_tokens=1000, output_tokens=1000)) is None
    assert client.sdk.max_retries == 0, "retries are the agent's own"


@pytest.mark.parametrize(("key", "sent"), [("", "retrace-offline"), ("sk-local-123", "sk-local-123")])
async def test_the_key_is_sent_or_a_placeholder(key: str, sent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)  # what the hand-off leaves for credentials.get
    with FakeModel(Scenario.model_validate({"responses": [{"text": "ok"}]})) as fake:
        client = build(access(f"{fake.base_url}/v1"))
        reply = await client.stream(REQUEST, noop)
    assert reply.blocks == [{"type": "text", "text": "ok"}]
    assert fake.headers[0]["authorization"] == f"Bearer {sent}"


def api_error(status: int, body: Any, headers: dict[str, str] | None = None) -> Any:
    request = httpx2.Request("POST", "http://h/v1/chat/completions")
    response = httpx2.Response(status, headers=headers or {}, json={"error": body}, request=request)
    data = body if isinstance(body, dict) else None  # the SDK passes the inner "error" object
    kind = openai.InternalServerError if status >= 500 else openai.APIStatusError
    return kind(f"Error code: {status}", response=response, body=data)


@pytest.mark.parametrize(
    ("status", "headers", "retryable", "wait", "says"),
    [
        (400, {}, False, None, "400 bad thing"),
        (401, {}, False, None, "refused the key"),
        (403, {}, False, None, "refused the key"),
        (404, {}, False, None, "check retrace.model.id and " + SETTING),
        (408, {}, True, None, "408 bad thing"),
        (409, {}, True, None, "409"),
        (422, {}, False, None, "422"),
        (429, {"retry-after": "7"}, True, 7.0, "429 bad thing"),
        (429, {"retry-after-ms": "250"}, True, 0.25, "429"),
        (500, {}, True, None, "500"),
        (503, {"retry-after": "1"}, True, 1.0, "503"),
        (529, {}, True, None, "529"),
    ],
)
def test_status_errors(
    status: int, headers: dict[str, str], retryable: bool, wait: float | None, says: str
) -> None:
    error = status_error(api_error(status, {"message": "bad thing", "type": "x"}, headers))
    assert says in str(error)
    assert error.retryable is retryable
    assert error.wait_s == wait
    assert "\n" not in str(error)


def test_a_status_error_without_a_message_names_its_kind() -> None:
    assert str(status_error(api_error(502, "not json at all"))) == "502 InternalServerError"


_HANDOFF_CHILD = """
import os, sys
from retrace import credentials
credentials.secure_process_start()
print("starts", flush=True)
environ = open("/proc/self/environ", "rb").read()
print("env-has-key", sys.argv[1].encode() in environ)
print("held", credentials.get("OPENAI_API_KEY") == sys.argv[1])
names = credentials.child_env()
print("child-env-clean", not any(k.startswith(("OPENAI_API", "RETRACE_OPENAI")) for k in names))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("handoff", ["env", "fd"])
def test_the_endpoint_key_is_handed_off_like_the_anthropic_key(handoff: str) -> None:
    key = "sk-openai-compatible-test-0123456789"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RETRACE_OPENAI", "ANTHROPIC_"))
    }
    pass_fds: tuple[int, ...] = ()
    if handoff == "env":
        env["OPENAI_API_KEY"] = key
    else:
        read_end, write_end = os.pipe()
        os.write(write_end, key.encode())
        os.close(write_end)
        env["RETRACE_OPENAI_API_KEY_FD"] = str(read_end)
        pass_fds = (read_end,)
    try:
        out = subprocess.run(
            [sys.executable, "-c", _HANDOFF_CHILD, key],
            env=env,
            pass_fds=pass_fds,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    finally:
        for fd in pass_fds:
            os.close(fd)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert out.count("starts") == 1, out
    assert lines == {"env-has-key": "False", "held": "True", "child-env-clean": "True"}, out


def mock_client(answer: Any) -> OpenAiCompatibleClient:
    transport = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    sdk = openai.AsyncOpenAI(base_url="http://h/v1", api_key="k", max_retries=0, http_client=transport)
    return OpenAiCompatibleClient(sdk, where="http://h/v1")


def ok_completion() -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    }


def refusal_400(message: str) -> httpx2.Response:
    return httpx2.Response(
        400, json={"error": {"message": message, "type": "invalid_request_error", "code": None}}
    )


WANTS_NEW_NAME = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


async def test_an_endpoint_that_wants_max_completion_tokens_gets_it_from_then_on() -> None:
    """OpenAI's own newer models refuse ``max_tokens``; local servers know only ``max_tokens``.
    The client sends ``max_tokens`` until an endpoint says so, then ``max_completion_tokens``."""
    seen: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        return (
            refusal_400(WANTS_NEW_NAME)
            if "max_tokens" in body
            else httpx2.Response(200, json=ok_completion())
        )

    client = mock_client(answer)
    assert (await client.complete(REQUEST)).blocks == [{"type": "text", "text": "ok"}]
    await client.complete(REQUEST)
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in seen] == [
        (True, None),
        (False, 16),
        (False, 16),
    ]


async def test_another_400_is_not_retried_with_the_other_name() -> None:
    seen: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return refusal_400("Unsupported parameter: 'tools' is not supported with this model.")

    with pytest.raises(ModelError, match=r"^400 Unsupported parameter: 'tools'") as caught:
        await mock_client(answer).complete(REQUEST)
    assert not caught.value.retryable
    assert len(seen) == 1


def chunk_line(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [choice],
            **extra,
        }
    )


USAGE_4 = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
SERVER_STREAMS: list[tuple[str, list[str], str | None]] = [
    (
        "an error event mid-stream",
        [chunk_line({"content": "hi"}), json.dumps({"error": {"message": "model crashed"}})],
        "the endpoint reported an error: model crashed",
    ),
    ("no [DONE] after the finish", [chunk_line({"content": "hi"}), chunk_line({}, "stop")], None),
    (
        "usage on the finish chunk",
        [chunk_line({"content": "hi"}), chunk_line({}, "stop", usage=USAGE_4), "[DONE]"],
        None,
    ),
    ("nothing but [DONE]", ["[DONE]"], "ended early"),
    ("a chunk that is not JSON", [chunk_line({"content": "hi"}), "{not json"], "could not be read"),
]


@pytest.mark.parametrize(
    ("lines", "error"), [c[1:] for c in SERVER_STREAMS], ids=[c[0] for c in SERVER_STREAMS]
)
async def test_what_other_servers_stream(lines: list[str], error: str | None) -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        body = "".join(f"data: {line}\n\n" for line in lines).encode()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    if error is None:
        reply = await mock_client(answer).stream(REQUEST, on_text)
        assert reply.blocks == [{"type": "text", "text": "hi"}] and reply.stop_reason == "end_turn"
        assert reply.usage.reported is ("usage" in "".join(lines))
    else:
        with pytest.raises(ModelError, match=re.escape(error)) as caught:
            await mock_client(answer).stream(REQUEST, on_text)
        assert not caught.value.retryable
