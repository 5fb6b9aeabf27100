"""The fake's Bedrock and Vertex wire forms against the Anthropic SDK's own clients, over real
HTTP, with the real AWS signer and the real google-auth chain."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropicBedrock, AsyncAnthropicVertex
from tests.providers.cloud_support import (
    BEDROCK_MODEL,
    PROJECT,
    REGION,
    VERTEX_MODEL,
    aws_credentials,
    google_credentials,
    service_account,
)

from retrace.offline.cloud_auth import TEST_AWS_ACCESS_KEY_ID
from retrace.offline.cloud_wire import cloud_state, event_frame

TOOLS = [
    {
        "name": "write_file",
        "description": "write a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
REPLY = {
    "text": "Writing the file now, in several streamed pieces of text.",
    "toolCalls": [{"name": "write_file", "input": {"path": "a.txt", "content": "x" * 40}}],
}


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def bedrock(**kw: Any) -> AsyncAnthropicBedrock:
    return AsyncAnthropicBedrock(aws_region=REGION, max_retries=0, **kw)


async def stream_reply(sdk: Any, model: str) -> tuple[list[str], Any]:
    deltas: list[str] = []
    async with sdk.messages.stream(
        model=model, max_tokens=100, messages=user("hi"), tools=TOOLS, system="be brief"
    ) as stream:
        async for event in stream:
            if event.type == "text":
                deltas.append(event.text)
        return deltas, await stream.get_final_message()


# --------------------------------------------------------------------------- Bedrock


async def test_bedrock_stream_is_an_event_stream_of_signed_requests(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = fake_factory(REPLY)
    aws_credentials(monkeypatch, tmp_path, fake)
    deltas, message = await stream_reply(bedrock(), BEDROCK_MODEL)
    assert len(deltas) > 2 and "".join(deltas) == REPLY["text"]
    assert message.stop_reason == "tool_use"
    assert message.content[1].input == {"path": "a.txt", "content": "x" * 40}
    assert fake.wires == ["bedrock"] and fake.statuses == [200]
    sent = fake.requests[0]
    assert sent["model"] == BEDROCK_MODEL, "the model id travelled in the path"
    assert sent["stream"] is True and "anthropic_version" not in sent
    auth = fake.headers[0]["authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={TEST_AWS_ACCESS_KEY_ID}/")
    assert f"/{REGION}/bedrock/aws4_request" in auth and "x-amz-date" in fake.headers[0]


async def test_bedrock_invoke_answers_one_message(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = fake_factory({"text": "one piece"})
    aws_credentials(monkeypatch, tmp_path, fake)
    message = await bedrock().messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert message.content[0].type == "text" and message.content[0].text == "one piece"
    assert fake.wires == ["bedrock"] and "stream" not in fake.requests[0]


@pytest.mark.parametrize(
    ("key_id", "secret", "reason"),
    [
        (TEST_AWS_ACCESS_KEY_ID, "not-the-secret", "signature we calculated does not match"),
        ("AKIAUNKNOWNKEY000000", "whatever", "security token included in the request is invalid"),
    ],
)
async def test_bedrock_refuses_a_bad_signature_in_its_error_shape(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key_id: str, secret: str, reason: str
) -> None:
    fake = fake_factory({"text": "never"})
    aws_credentials(monkeypatch, tmp_path, fake)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        await bedrock().messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert reason in str(caught.value)
    assert caught.value.response.headers["x-amzn-errortype"].startswith("UnrecognizedClient") or (
        caught.value.response.headers["x-amzn-errortype"].startswith("AccessDeniedException")
    )
    assert fake.requests == [] and [s for _, s, _ in cloud_state(fake).refused] == [403]


async def test_bedrock_refuses_a_signature_from_twenty_minutes_ago(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import datetime

    import botocore.auth

    fake = fake_factory({"text": "never"})
    aws_credentials(monkeypatch, tmp_path, fake)
    then = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(minutes=20)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: then)
    with pytest.raises(anthropic.PermissionDeniedError, match="Signature expired"):
        await bedrock().messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert fake.requests == []


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


@pytest.mark.parametrize(
    ("headers", "body", "status", "reason"),
    [
        ({}, {"anthropic_version": "bedrock-2023-05-31"}, 403, "Missing Authentication Token"),
        ({"authorization": "AWS4-HMAC-SHA256 garbage"}, {}, 403, "Missing Authentication Token"),
        (
            {"authorization": "Bearer k"},
            {"model": "m", "anthropic_version": "bedrock-2023-05-31"},
            400,
            "[model]",
        ),
        ({"authorization": "Bearer k"}, {"max_tokens": 5}, 400, "anthropic_version"),
        (
            {"authorization": "Bearer k"},
            {"anthropic_version": "v0", "max_tokens": 5},
            400,
            "anthropic_version",
        ),
        (
            {"authorization": "Bearer k"},
            {"anthropic_version": "bedrock-2023-05-31", "stream": True},
            400,
            "[stream]",
        ),
    ],
)
def test_bedrock_refuses_what_the_sdk_never_sends(
    fake_factory: Any, headers: dict[str, str], body: dict[str, Any], status: int, reason: str
) -> None:
    fake = fake_factory({"text": "never"})
    code, answer, got = _post(
        f"{fake.base_url}/model/{BEDROCK_MODEL}/invoke", json.dumps(body).encode(), headers
    )
    assert code == status and reason in answer["message"], answer
    assert "x-amzn-errortype" in {k.lower() for k in got}
    assert fake.requests == []


async def test_bedrock_api_key_is_a_bearer_and_messages_rules_still_hold(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = fake_factory({"text": "ok"})
    aws_credentials(monkeypatch, tmp_path, fake)
    sdk = bedrock(api_key="ABSK-test-bedrock-key")
    with pytest.raises(anthropic.BadRequestError, match=r"alternat|user"):
        await sdk.messages.create(
            model=BEDROCK_MODEL, max_tokens=10, messages=[{"role": "assistant", "content": "first"}]
        )
    message = await sdk.messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert message.content[0].type == "text"
    assert [h["authorization"] for h in fake.headers] == ["Bearer ABSK-test-bedrock-key"] * 2
    assert fake.statuses == [400, 200] and fake.wires == ["bedrock", "bedrock"]


async def test_bedrock_rate_limit_is_a_429_with_the_wait(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = fake_factory({"status": 429, "times": 1, "retryAfterMs": "20", "text": "after the wait"})
    aws_credentials(monkeypatch, tmp_path, fake)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await bedrock().messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert caught.value.response.headers["retry-after-ms"] == "20"
    assert caught.value.response.headers["x-amzn-errortype"].startswith("ThrottlingException")
    again = await bedrock().messages.create(model=BEDROCK_MODEL, max_tokens=10, messages=user("a"))
    assert again.content[0].type == "text" and again.content[0].text == "after the wait"


def test_event_frames_decode_with_the_aws_decoder() -> None:
    from botocore.eventstream import EventStreamBuffer

    payload = json.dumps({"bytes": "eyJ0eXBlIjoicGluZyJ9"}).encode()
    frame = event_frame({":event-type": "chunk", ":message-type": "event"}, payload)
    buffer = EventStreamBuffer()
    buffer.add_data(frame[:7])
    assert list(buffer) == []
    buffer.add_data(frame[7:] + frame)
    messages = list(buffer)
    assert len(messages) == 2 and messages[0].payload == payload
    assert messages[0].headers == {":event-type": "chunk", ":message-type": "event"}
    damaged = bytearray(frame)
    damaged[20] ^= 1
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(damaged))
    with pytest.raises(Exception, match=r"(?i)crc|checksum"):
        list(buffer)


# --------------------------------------------------------------------------- Vertex


def vertex(**kw: Any) -> AsyncAnthropicVertex:
    return AsyncAnthropicVertex(region=REGION, max_retries=0, **kw)


async def test_vertex_runs_the_google_auth_chain_and_streams_sse(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = fake_factory(REPLY, {"text": "second"})
    google_credentials(monkeypatch, tmp_path, fake)
    sdk = vertex(project_id=PROJECT)
    deltas, message = await stream_reply(sdk, VERTEX_MODEL)
    assert "".join(deltas) == REPLY["text"] and message.stop_reason == "tool_use"
    again = await sdk.messages.create(model=VERTEX_MODEL, max_tokens=10, messages=user("b"))
    assert again.content[0].type == "text" and again.content[0].text == "second"
    assert fake.wires == ["vertex", "vertex"]
    assert [r["model"] for r in fake.requests] == [VERTEX_MODEL] * 2
    assert fake.requests[0]["stream"] is True and fake.requests[1]["stream"] is False
    assert all("anthropic_version" not in r for r in fake.requests)
    assert cloud_state(fake).google.grants == 1, "one token, refreshed by nobody, used twice"
    assert fake.headers[0]["authorization"].startswith("Bearer ya29.fake-")


async def test_vertex_refuses_a_token_it_did_not_issue(fake_factory: Any) -> None:
    fake = fake_factory({"text": "never"})
    sdk = AsyncAnthropicVertex(
        region=REGION,
        project_id=PROJECT,
        access_token="ya29.forged",
        base_url=fake.base_url + "/v1",
        max_retries=0,
    )
    with pytest.raises(anthropic.AuthenticationError) as caught:
        await sdk.messages.create(model=VERTEX_MODEL, max_tokens=10, messages=user("a"))
    assert caught.value.body["error"]["status"] == "UNAUTHENTICATED"  # type: ignore[index]
    assert fake.requests == [] and cloud_state(fake).refused[0][:2] == ("vertex", 401)


async def test_vertex_token_grant_checks_the_jwt_signature(
    fake_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from google.auth.exceptions import RefreshError

    fake = fake_factory({"text": "never"})
    trusted = json.loads(google_credentials(monkeypatch, tmp_path, fake).read_text())
    impostor = service_account(fake, tmp_path, trusted=False)
    info = json.loads(impostor.read_text())
    info["private_key_id"] = trusted["private_key_id"]  # claims the trusted key, signs with its own
    impostor.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(impostor))
    with pytest.raises(RefreshError, match="Invalid JWT Signature"):
        await vertex(project_id=PROJECT).messages.create(
            model=VERTEX_MODEL, max_tokens=10, messages=user("a")
        )
    assert fake.requests == [] and cloud_state(fake).google.grants == 0
