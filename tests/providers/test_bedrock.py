"""Amazon Bedrock through the Anthropic SDK's own client (``AsyncAnthropicBedrock``), built by the
real composition (``ModelEndpoint.client_factory``), against the fake's Bedrock wire: SigV4
signatures made by botocore from the AWS chain and verified by the fake, or a Bedrock API key."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.model.cloud import CloudClient, install_hint
from retrace.agent.model.interface import ModelError, ModelRequest, ReplyUsage
from retrace.agent.model.providers import UnavailableClient
from retrace.agent.settings import AgentSettings
from retrace.bootstrap import ModelEndpoint
from retrace.offline.cloud_wire import cloud_state
from retrace.offline.validation import validate_request

from .agent_scenario import (
    assert_same_as_anthropic,
    failing_once,
    retried_once,
    run_agent_scenario,
    scenario_fake,
    scenario_settings,
)
from .cloud_support import BEDROCK_MODEL, REGION, aws_credentials, no_cloud_credentials


def bedrock_settings(**bedrock: str) -> AgentSettings:
    access = {"provider": "bedrock", "id": BEDROCK_MODEL, "bedrock": {"region": REGION, **bedrock}}
    return scenario_settings(model=BEDROCK_MODEL, access=access)


def client_for(settings: AgentSettings) -> Any:
    return ModelEndpoint().client_factory()(settings)


def has_cache_breakpoints(body: dict[str, Any]) -> bool:
    return '"cache_control"' in json.dumps(body)


async def test_bedrock_passes_the_provider_scenario_signed_by_the_aws_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = scenario_fake()
    try:
        aws_credentials(monkeypatch, tmp_path, fake)
        settings = bedrock_settings()
        outcome = await run_agent_scenario(tmp_path, fake, settings, ModelEndpoint().client_factory())
    finally:
        fake.stop()
    await assert_same_as_anthropic(outcome, tmp_path)
    assert set(fake.wires) == {"bedrock"} and set(fake.statuses) == {200}
    paths = cloud_state(fake).paths
    assert paths and all(p.startswith(f"/model/{BEDROCK_MODEL}/invoke") for p in paths), paths
    assert all(h["authorization"].startswith("AWS4-HMAC-SHA256 ") for h in fake.headers)
    validate_request(outcome.last_request)  # the Messages rules, model id from the path
    assert has_cache_breakpoints(outcome.last_request), "prompt caching stays on for Claude on Bedrock"


async def test_bedrock_api_key_is_sent_as_a_bearer_with_no_aws_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = scenario_fake()
    try:
        no_cloud_credentials(monkeypatch, tmp_path)  # no AWS chain at all: the key is enough
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)
        monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-handed-off")  # as held after a hand-off
        outcome = await run_agent_scenario(
            tmp_path, fake, bedrock_settings(), ModelEndpoint().client_factory()
        )
    finally:
        fake.stop()
    assert outcome.last_status == 200 and outcome.final_text == "Only the plan exists now."
    assert {h["authorization"] for h in fake.headers} == {"Bearer ABSK-handed-off"}


def _turn_request() -> ModelRequest:
    return ModelRequest(
        model=BEDROCK_MODEL, max_tokens=50, system="s", messages=[{"role": "user", "content": "hi"}]
    )


async def _failure(client: Any) -> str:
    async def sink(_: str) -> None:
        return None

    with pytest.raises(ModelError) as caught:
        await client.stream(_turn_request(), sink)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message, message
    return message


@pytest.mark.parametrize(
    ("bedrock", "env", "expected"),
    [
        ({}, {}, "no AWS credentials found for Amazon Bedrock"),
        ({"region": ""}, {}, "set retrace.model.bedrock.region"),
        ({"profile": "nobody-has-this"}, {}, "retrace.model.bedrock.profile"),
        ({"profile": "work"}, {"AWS_BEARER_TOKEN_BEDROCK": "ABSK-x"}, "clear the profile to use the key"),
    ],
)
async def test_bedrock_without_usable_credentials_fails_in_one_line_naming_what_to_check(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bedrock: dict[str, str],
    env: dict[str, str],
    expected: str,
) -> None:
    no_cloud_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", "http://127.0.0.1:9")  # never reached
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    client = client_for(bedrock_settings(**bedrock))
    assert isinstance(client, CloudClient) and client.provider == "bedrock"
    assert expected in await _failure(client)


async def test_a_key_bedrock_does_not_know_is_refused_naming_the_settings_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = scenario_fake()
    try:
        aws_credentials(monkeypatch, tmp_path, fake)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAOTHERACCOUNT0000")  # not this "account"'s key
        message = await _failure(client_for(bedrock_settings()))
    finally:
        fake.stop()
    expected = (
        "403 The security token included in the request is invalid.; check retrace.model.bedrock.region"
    )
    assert message.startswith(expected), message
    assert cloud_state(fake).refused[0][:2] == ("bedrock", 403) and fake.requests == []


async def test_bedrock_turn_with_no_credentials_ends_with_that_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.agent.conftest import RecordingHost, make_workspace

    from retrace.agent.session import AgentService
    from retrace.engine import Engine
    from retrace.engine.config import EngineConfig

    no_cloud_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", "http://127.0.0.1:9")
    engine = Engine.open(make_workspace(tmp_path), tmp_path / "store", config=EngineConfig(watcher=False))
    host = RecordingHost()
    service = AgentService(engine, host, bedrock_settings(), ModelEndpoint().client_factory())
    try:
        sid, _ = await service.prompt("hello", None)
        await asyncio.wait_for(service.wait_idle(sid), 60)
    finally:
        engine.close()
    errors = host.of("error")
    assert [e.retrying for e in errors] == [False], errors
    assert errors[0].message.startswith("the model call failed: no AWS credentials found for Amazon Bedrock")
    assert "\n" not in errors[0].message


@pytest.mark.parametrize("status", [429, 529])
async def test_bedrock_rate_limit_and_overload_are_retried_like_the_anthropic_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    fake = failing_once(status)
    try:
        aws_credentials(monkeypatch, tmp_path, fake)
        await retried_once(tmp_path, status, bedrock_settings(), ModelEndpoint().client_factory(), fake)
    finally:
        fake.stop()


def test_bedrock_prices_claude_by_its_anthropic_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_cloud_credentials(monkeypatch, tmp_path)
    client = client_for(bedrock_settings())
    assert client.caching is True
    cost = client.cost_usd(BEDROCK_MODEL, ReplyUsage(input_tokens=1_000_000, output_tokens=0))
    assert cost == pytest.approx(3.0)
    profile = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"
    assert client.cost_usd(profile, ReplyUsage(input_tokens=1000)) is None, "unknown, not invented"


def test_without_boto3_the_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    client = client_for(bedrock_settings())
    assert isinstance(client, UnavailableClient)
    assert (
        install_hint("bedrock") in client.message
        and "pip install 'retrace-checkpoints[bedrock]'" in client.message
    )


def test_each_aws_chain_failure_has_its_own_line() -> None:
    from botocore import exceptions as aws

    from retrace.agent.model.cloud import explain_aws
    from retrace.agent.model.settings import BedrockSettings

    settings = BedrockSettings(profile="work")
    table: list[tuple[BaseException, str | None]] = [
        (aws.ProfileNotFound(profile="work"), "the AWS profile 'work' was not found"),
        (aws.NoRegionError(), "set retrace.model.bedrock.region"),
        (aws.NoCredentialsError(), "no AWS credentials found"),
        (RuntimeError("Could not resolve AWS credentials from session"), "no AWS credentials found"),
        (aws.TokenRetrievalError(provider="sso", error_msg="expired"), "run 'aws sso login'"),
        (aws.UnauthorizedSSOTokenError(), "run 'aws sso login'"),
        (aws.EndpointConnectionError(endpoint_url="https://sts"), "could not be used"),
        (ValueError("something else"), None),
    ]
    for error, expected in table:
        explained = explain_aws(error, settings)
        if expected is None:
            assert explained is None, error
            continue
        assert explained is not None and expected in str(explained), (error, explained)
        assert "\n" not in str(explained)
    connection = explain_aws(aws.EndpointConnectionError(endpoint_url="https://sts"), settings)
    assert connection is not None and connection.retryable


async def test_concurrent_first_calls_build_one_sdk_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrace.agent.model.anthropic_family import AnthropicFamilyClient

    fake = scenario_fake()
    built: list[AnthropicFamilyClient] = []
    try:
        aws_credentials(monkeypatch, tmp_path, fake)
        real = client_for(bedrock_settings())

        def build() -> AnthropicFamilyClient:
            built.append(asyncio.run(real.family()))
            return built[-1]

        client = CloudClient("bedrock", build, lambda _: None)
        families = await asyncio.gather(*(client.family() for _ in range(5)))
        assert str(built[0].sdk.base_url).startswith(fake.base_url)
    finally:
        fake.stop()
    assert len(built) == 1 and all(f is built[0] for f in families)
