"""Google Vertex AI through the Anthropic SDK's own client (``AsyncAnthropicVertex``), built by the
real composition (``ModelEndpoint.client_factory``), against the fake's Vertex wire: the real
google-auth chain signs a service account's JWT, the fake's token endpoint grants an access
token, and every Vertex call must carry it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.model.cloud import CloudClient
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
from .cloud_support import PROJECT, REGION, VERTEX_MODEL, google_credentials, no_cloud_credentials


def vertex_settings(**vertex: str) -> AgentSettings:
    access = {"provider": "vertex", "id": VERTEX_MODEL, "vertex": {"region": REGION, **vertex}}
    return scenario_settings(model=VERTEX_MODEL, access=access)


def client_for(settings: AgentSettings) -> Any:
    return ModelEndpoint().client_factory()(settings)


@pytest.mark.parametrize("project", ["", "configured-project"])
async def test_vertex_passes_the_provider_scenario_with_application_default_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str
) -> None:
    fake = scenario_fake()
    try:
        google_credentials(monkeypatch, tmp_path, fake)
        settings = vertex_settings(projectId=project)
        outcome = await run_agent_scenario(tmp_path, fake, settings, ModelEndpoint().client_factory())
    finally:
        fake.stop()
    await assert_same_as_anthropic(outcome, tmp_path)
    assert set(fake.wires) == {"vertex"} and set(fake.statuses) == {200}
    # The project: the setting, else the one the credentials name (the service account's).
    where = (
        f"/v1/projects/{project or PROJECT}/locations/{REGION}/publishers/anthropic/models/{VERTEX_MODEL}:"
    )
    assert all(p.replace("%40", "@").startswith(where) for p in cloud_state(fake).paths), cloud_state(
        fake
    ).paths
    assert cloud_state(fake).google.grants == 1, "one access token for the whole scenario"
    validate_request(outcome.last_request)
    assert '"cache_control"' in json.dumps(outcome.last_request), (
        "prompt caching stays on for Claude on Vertex"
    )


def _request() -> ModelRequest:
    return ModelRequest(
        model=VERTEX_MODEL, max_tokens=50, system="s", messages=[{"role": "user", "content": "hi"}]
    )


async def _failure(client: Any) -> str:
    with pytest.raises(ModelError) as caught:
        await client.complete(_request())
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message, message
    return message


async def test_vertex_with_no_google_credentials_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_cloud_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    for project in ("", PROJECT):  # the project does not matter: there is nothing to sign in with
        client = client_for(vertex_settings(projectId=project))
        assert isinstance(client, CloudClient)
        message = await _failure(client)
        assert message.startswith("no Google credentials found for Vertex AI"), message
        assert "gcloud auth application-default login" in message


async def test_vertex_credentials_naming_no_project_ask_for_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = scenario_fake()
    try:
        path = google_credentials(monkeypatch, tmp_path, fake)
        info = json.loads(path.read_text())
        del info["project_id"]
        path.write_text(json.dumps(info))
        message = await _failure(client_for(vertex_settings()))
    finally:
        fake.stop()
    assert "set retrace.model.vertex.projectId" in message, message
    assert fake.requests == []


async def test_vertex_refused_credentials_fail_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = scenario_fake()
    try:
        path = google_credentials(monkeypatch, tmp_path, fake)
        cloud_state(fake).google.public_keys.clear()
        cloud_state(fake).google.trust(json.loads(path.read_text())["private_key_id"], _other_public_key())
        message = await _failure(client_for(vertex_settings()))
    finally:
        fake.stop()
    assert message.startswith("Google refused the credentials") and "Invalid JWT Signature" in message, (
        message
    )


def _other_public_key() -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@pytest.mark.parametrize("status", [429, 529])
async def test_vertex_rate_limit_and_overload_are_retried_like_the_anthropic_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    fake = failing_once(status)
    try:
        google_credentials(monkeypatch, tmp_path, fake)
        await retried_once(tmp_path, status, vertex_settings(), ModelEndpoint().client_factory(), fake)
    finally:
        fake.stop()


def test_vertex_with_no_region_is_refused_naming_the_setting() -> None:
    client = client_for(vertex_settings(region=" "))
    assert isinstance(client, UnavailableClient) and "retrace.model.vertex.region is empty" in client.message


def test_vertex_prices_claude_by_its_anthropic_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_cloud_credentials(monkeypatch, tmp_path)
    client = client_for(vertex_settings())
    assert client.caching is True
    assert client.cost_usd(VERTEX_MODEL, ReplyUsage(input_tokens=1_000_000)) == pytest.approx(3.0)


def test_without_google_auth_the_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.auth", None)
    client = client_for(vertex_settings())
    assert isinstance(client, UnavailableClient)
    assert "pip install 'retrace-checkpoints[vertex]'" in client.message


def test_each_google_credential_failure_has_its_own_line() -> None:
    from google.auth import exceptions as google

    from retrace.agent.model.cloud import explain_google

    table: list[tuple[BaseException, str | None, bool]] = [
        (google.DefaultCredentialsError("none"), "no Google credentials found", False),
        (
            google.RefreshError("invalid_grant: revoked"),
            "Google refused the credentials (invalid_grant",
            False,
        ),
        (google.TransportError("timed out"), "cannot reach Google's sign-in service", True),
        (google.GoogleAuthError("odd"), "could not be used (odd)", False),
        (ValueError("something else"), None, False),
    ]
    for error, expected, retryable in table:
        explained = explain_google(error)
        if expected is None:
            assert explained is None, error
            continue
        assert explained is not None and expected in str(explained), (error, explained)
        assert explained.retryable is retryable and "\n" not in str(explained)
