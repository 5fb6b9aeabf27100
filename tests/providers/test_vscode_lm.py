"""The provider scenario through the ``vscode-lm`` client: the agent's requests go out in the
editor bridge's form (what the extension hands to ``vscode.lm``). A scripted editor stands in for
VS Code: it turns each bridge request back into the Messages API's form and asks the local fake,
so the fake's validation judges every request (each tool call answered by its result, in
order) and its scenario answers, as for every other provider; the answer comes back as the
bridge's parts, its text streamed piece by piece as the extension does. The extension's own half
(bridge → ``vscode.lm`` classes) is tested in the extension host (``vscodeLm`` suite)."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

from retrace.agent.model.interface import TextSink
from retrace.agent.model.settings import ModelSettings
from retrace.bootstrap import ModelEndpoint
from retrace.offline import FakeModel

from .agent_scenario import assert_same_as_anthropic, run_agent_scenario, scenario_fake, scenario_settings


def _block(part: dict[str, Any]) -> dict[str, Any]:
    if part["kind"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["kind"] == "toolCall":
        return {"type": "tool_use", "id": part["callId"], "name": part["name"], "input": part["input"]}
    return {"type": "tool_result", "tool_use_id": part["callId"], "content": "\n".join(part["content"])}


def _ask(request: urllib.request.Request) -> dict[str, Any]:
    with urllib.request.urlopen(request, timeout=30) as answer:
        result: dict[str, Any] = json.loads(answer.read())
        return result


class ScriptedEditor:
    """VS Code's side of the bridge, answered by the fake's scenario."""

    def __init__(self, fake: FakeModel) -> None:
        self.fake = fake
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: dict[str, Any], on_text: TextSink) -> dict[str, Any]:
        self.requests.append(request)
        body = {
            "model": request["model"].get("id") or "editor-model",
            "max_tokens": request.get("maxTokens") or 4096,
            "messages": [
                {"role": m["role"], "content": [_block(p) for p in m["parts"]]} for m in request["messages"]
            ],
            "tools": [
                {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
                for t in request["tools"]
            ],
        }
        http = urllib.request.Request(
            f"{self.fake.base_url}/v1/messages",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "x-api-key": "editor"},
        )
        message = await asyncio.to_thread(_ask, http)
        parts: list[dict[str, Any]] = []
        for block in message["content"]:
            if block["type"] == "text":
                for start in range(0, len(block["text"]), 7):  # streamed in pieces, as VS Code does
                    await on_text(block["text"][start : start + 7])
                parts.append({"kind": "text", "text": block["text"]})
            elif block["type"] == "tool_use":
                parts.append(
                    {
                        "kind": "toolCall",
                        "callId": block["id"],
                        "name": block["name"],
                        "input": block["input"],
                    }
                )
        return {"parts": parts}


async def test_the_editor_models_pass_the_provider_scenario(tmp_path: Path) -> None:
    fake = scenario_fake()
    editor = ScriptedEditor(fake)
    try:
        settings = scenario_settings(model="", access=ModelSettings(provider="vscode-lm"))
        factory = ModelEndpoint().client_factory(editor)
        outcome = await run_agent_scenario(tmp_path / "vscode-lm", fake, settings, factory)
    finally:
        fake.stop()
    await assert_same_as_anthropic(outcome, tmp_path)
    # Every request went out in the bridge's form, never with a key, a price or a cache breakpoint.
    assert len(editor.requests) == 3 and all(r["model"]["vendor"] == "copilot" for r in editor.requests)
    assert "cache_control" not in json.dumps(editor.requests)
    last = editor.requests[-1]["messages"][-1]["parts"]
    assert [p["kind"] for p in last] == ["toolResult", "toolResult", "text"]
    assert last[-1]["text"] == "what changed since the plan?"
