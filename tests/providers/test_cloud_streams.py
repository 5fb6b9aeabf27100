"""A broken reply stream fails the same way whichever wire carried it: Bedrock's event stream
and Vertex's server-sent events end in the same one-line, non-retryable :class:`ModelError` as
the Anthropic API's (nothing partial is returned: the loop keeps none of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrace.agent.model.interface import ModelError, ModelRequest
from retrace.bootstrap import ModelEndpoint
from retrace.offline import FakeModel, Scenario

from .agent_scenario import scenario_settings
from .cloud_support import BEDROCK_MODEL, VERTEX_MODEL, aws_credentials, google_credentials
from .test_bedrock import bedrock_settings
from .test_vertex import vertex_settings


async def _broken_stream(wire: str, flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelError:
    reply: dict[str, Any] = {"text": "a reply that streams in several pieces", flag: True}
    if flag == "invalidToolJson":
        reply["toolCalls"] = [{"name": "write_file", "input": {"path": "x"}}]
    fake = FakeModel(Scenario.model_validate({"responses": [reply]}))
    fake.start()
    try:
        if wire == "bedrock":
            aws_credentials(monkeypatch, tmp_path, fake)
            settings, model = bedrock_settings(), BEDROCK_MODEL
        elif wire == "vertex":
            google_credentials(monkeypatch, tmp_path, fake)
            settings, model = vertex_settings(), VERTEX_MODEL
        else:
            settings, model = scenario_settings(base_url=fake.base_url), "claude-test-model"
        client = ModelEndpoint().client_factory()(settings)
        pieces: list[str] = []

        async def sink(text: str) -> None:
            pieces.append(text)

        request = ModelRequest(
            model=model, max_tokens=50, system="s", messages=[{"role": "user", "content": "hi"}]
        )
        with pytest.raises(ModelError) as caught:
            await client.stream(request, sink)
        assert fake.wires == [wire]
        return caught.value
    finally:
        fake.stop()


@pytest.mark.parametrize("flag", ["truncateStream", "invalidToolJson"])
async def test_a_broken_stream_fails_alike_on_every_wire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    errors = {
        wire: await _broken_stream(wire, flag, tmp_path / wire, monkeypatch)
        for wire in ("anthropic", "bedrock", "vertex")
    }
    messages = {wire: str(error) for wire, error in errors.items()}
    assert len(set(messages.values())) == 1, messages
    assert not any(error.retryable for error in errors.values())
    assert all("\n" not in m for m in messages.values())
