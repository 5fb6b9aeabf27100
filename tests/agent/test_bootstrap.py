"""The composition root builds one engine, one gate, one model client factory and one agent, and
chooses the model endpoint from configuration in one place."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.oracles import file_bytes

from retrace.agent.model.anthropic_family import AnthropicFamilyClient
from retrace.agent.permissions import PermissionSettings
from retrace.agent.settings import AgentSettings
from retrace.bootstrap import DEMO_MARKER, ModelEndpoint, NoApiKey, open_services, stop_offline_models
from retrace.engine import Engine
from retrace.engine.errors import RetraceError

from .conftest import RecordingHost, make_workspace

AUTO = AgentSettings(permissions=PermissionSettings(write="auto", command="auto"), retry_base_delay_s=0)


async def test_offline_demo_in_a_demo_folder_when_nothing_is_configured(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / DEMO_MARKER).write_text("{}")
    host = RecordingHost()
    services = await open_services(ws, tmp_path / "store", host, AUTO, endpoint=ModelEndpoint())
    try:
        assert services.fake_model_url is not None
        assert services.model_mode(None) == "demo"
        assert services.agent.settings.base_url == services.fake_model_url
        assert services.agent.gate is services.gate  # one gate for the agent and the server
        assert services.gate.engine is services.engine
        sid, _ = await services.agent.prompt("look around")
        await services.agent.wait_idle(sid)
        finished = host.of("turnFinished")
        assert [e.stop_reason for e in finished] == ["end_turn"]
        assert (ws / "src" / "greeting.py").exists()  # the demo scenario ran through the real SDK
        assert await services.run(lambda e: len(e.timeline())) > 1
    finally:
        services.close()
        services.close()  # idempotent
        stop_offline_models()
    Engine.open(ws, tmp_path / "store").close()  # the store lock was released


async def test_no_key_in_a_real_folder_starts_no_model_and_refuses_turns(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    before = file_bytes(ws)
    services = await open_services(ws, tmp_path / "store", RecordingHost(), AUTO, endpoint=ModelEndpoint())
    try:
        assert services.fake_model_url is None
        assert services.model_mode(None) == "noKey"
        with pytest.raises(NoApiKey, match="Set API Key"):
            services.require_model(None)
        services.require_model("http://127.0.0.1:9")  # a base URL configured later makes it live
        assert services.model_mode("http://127.0.0.1:9") == "live"
    finally:
        services.close()
    assert file_bytes(ws) == before


async def test_a_configured_endpoint_is_used_and_no_fake_is_started(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    for endpoint, settings in (
        (ModelEndpoint(api_key="sk-test"), AUTO),
        (ModelEndpoint(base_url="http://127.0.0.1:9"), AUTO),
        (ModelEndpoint(), AUTO.model_copy(update={"base_url": "http://127.0.0.1:9"})),
    ):
        services = await open_services(ws, tmp_path / "store", RecordingHost(), settings, endpoint=endpoint)
        try:
            assert services.fake_model_url is None
            model_client = endpoint.client_factory()(services.agent.settings)
            assert isinstance(model_client, AnthropicFamilyClient)
            client = model_client.sdk
            expected = settings.base_url or endpoint.base_url
            if expected:
                assert str(client.base_url).rstrip("/") == expected
            assert client.api_key == (endpoint.api_key or ("retrace-offline" if expected else None))
            assert client.max_retries == 0  # retries are the agent's own, reported as events
        finally:
            services.close()


async def test_a_failed_open_releases_the_store(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(RetraceError):
        await open_services(
            ws, tmp_path / "store", RecordingHost(), AUTO, endpoint=ModelEndpoint(fake_scenario="no-such")
        )
    Engine.open(ws, tmp_path / "store").close()
