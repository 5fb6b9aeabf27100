"""The ``vscode-lm`` provider inside the real agent (:func:`retrace.bootstrap.open_services`, a real
engine): with the editor's models, a tool call runs and checkpoints and the next request carries
its result, with no key or endpoint anywhere; without an editor (``retrace run``, or any caller
that passes none) the turn ends with the one line saying so, and nothing is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.oracles import file_bytes

from retrace.agent.model.interface import TextSink
from retrace.agent.model.providers import NO_EDITOR
from retrace.agent.model.settings import ModelSettings
from retrace.agent.permissions import PermissionSettings
from retrace.agent.settings import AgentSettings
from retrace.bootstrap import ModelEndpoint, open_services

from .conftest import RecordingHost, make_workspace

SETTINGS = AgentSettings(
    permissions=PermissionSettings(write="auto", command="auto"),
    retry_base_delay_s=0,
    model="",
    access=ModelSettings(provider="vscode-lm"),
)


class Editor:
    """The editor's side, scripted: a write, then a closing text."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: dict[str, Any], on_text: TextSink) -> dict[str, Any]:
        self.requests.append(request)
        if len(self.requests) == 1:
            await on_text("Writing.")
            call = {
                "kind": "toolCall",
                "callId": "c1",
                "name": "write_file",
                "input": {"path": "n.txt", "content": "n\n"},
            }
            return {"parts": [{"kind": "text", "text": "Writing."}, call]}
        await on_text("Done.")
        return {"parts": [{"kind": "text", "text": "Done."}]}


async def test_a_turn_through_the_editors_models(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    host, editor = RecordingHost(), Editor()
    services = await open_services(
        ws, tmp_path / "store", host, SETTINGS, endpoint=ModelEndpoint(), editor_models=editor
    )
    try:
        assert services.model_mode(None, SETTINGS.access) == "live"
        services.require_model(None, SETTINGS.access)  # no key needed
        sid, _ = await services.agent.prompt("write n.txt")
        await services.agent.wait_idle(sid)
        assert [e.stop_reason for e in host.of("turnFinished")] == ["end_turn"]
        assert (ws / "n.txt").read_text() == "n\n"
        assert [e.checkpoint.tool for e in host.of("checkpointCreated")] == ["write_file"]
        assert "".join(e.text for e in host.of("textDelta")) == "Writing.Done."
        result = editor.requests[1]["messages"][-1]["parts"][0]
        assert result["kind"] == "toolResult" and result["callId"] == "c1"
        usage = host.of("usage")[-1]
        assert usage.cost_unknown, "the cost line says unknown: the editor's models have no price here"
    finally:
        services.close()


async def test_without_an_editor_the_turn_ends_with_one_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    before = file_bytes(ws)
    host = RecordingHost()
    services = await open_services(ws, tmp_path / "store", host, SETTINGS, endpoint=ModelEndpoint())
    try:
        sid, _ = await services.agent.prompt("anything")
        await services.agent.wait_idle(sid)
        errors = [e.message for e in host.of("error")]
        assert errors == [f"the model call failed: {NO_EDITOR}"]
        assert not host.of("checkpointCreated")
    finally:
        services.close()
    assert file_bytes(ws) == before
