"""The ``vscode-lm`` provider through the real server process: with no API key and no fake model,
the agent's model requests go to the editor as ``retrace/model/chat`` (this test client plays
the extension: it answers from a script and streams the text as ``retrace/model/chatDelta``).
A tool call runs and checkpoints, the streamed text reaches the chat, the next request carries
the tool result, a conversation restore gives a valid next request, a cancelled turn cancels the
editor's request; the editor's failures, a malformed answer and an extension without the method
are each one clear line."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import APP_PY, EditorClient, start_editor, stop_editor, validate, wait_until
from tests.workspaces import project

from retrace.protocol.model_bridge import ModelChatParams

SETTINGS = {
    "model": {"provider": "vscode-lm", "id": "test-model", "vscodeLm": {"vendor": "retrace-test"}},
    "permissions": {"write": "auto", "command": "auto"},
}
Script = Callable[[dict[str, Any], Callable[[str], None]], Any]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "ws", {"src/app.py": APP_PY})


def no_model_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return {**env, "RETRACE_FAKE_MODEL": ""}


async def start(workspace: Path, tmp_path: Path, *, answer: bool = True) -> tuple[EditorClient, list[Any]]:
    """The server, and the list of chat requests it sent; ``answer``: play an extension that
    answers ``retrace/model/chat`` from ``editor.script`` (else one that lacks the method)."""
    editor = await start_editor(workspace, tmp_path / "store", env=no_model_env(), settings=SETTINGS)
    requests: list[Any] = []
    if answer:

        @editor.client.feature("retrace/model/chat")
        async def on_chat(params: dict[str, Any]) -> dict[str, Any]:
            validate("#/$defs/ModelChatParams", params)
            requests.append(params)

            def delta(text: str) -> None:
                editor.client.protocol.notify(
                    "retrace/model/chatDelta", {"requestId": params["requestId"], "text": text}
                )

            if len(requests) == 1:
                stray.append(delta)
            result: dict[str, Any] = await SCRIPTS[len(requests) - 1](params, delta)
            if len(requests) != len(SCRIPTS):
                validate("#/$defs/ModelChatResult", result)
            return result

    return editor, requests


async def tool_then_text(params: dict[str, Any], delta: Callable[[str], None]) -> dict[str, Any]:
    delta("Writing ")
    delta("it.")
    call = {
        "kind": "toolCall",
        "callId": "call_w1",
        "name": "write_file",
        "input": {"path": "hello.txt", "content": "hi\n"},
    }
    return {"parts": [{"kind": "text", "text": "Writing it."}, call], "model": "test-model"}


stray: list[Callable[[str], None]] = []


async def text_only(params: dict[str, Any], delta: Callable[[str], None]) -> dict[str, Any]:
    for send in stray:  # a piece naming another (finished) request is not this reply's
        send("STRAY")
    delta("Done")
    delta(" now.")
    return {"parts": [{"kind": "text", "text": "Done now."}]}


cancelled = asyncio.Event()


async def never_answers(params: dict[str, Any], delta: Callable[[str], None]) -> dict[str, Any]:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    return {"parts": []}


async def refused(params: dict[str, Any], delta: Callable[[str], None]) -> dict[str, Any]:
    return {"parts": [], "error": {"code": "NoPermissions", "message": "Language model 'x' cannot be used"}}


async def malformed(params: dict[str, Any], delta: Callable[[str], None]) -> Any:
    return {"parts": [{"kind": "toolCall", "callId": 7, "name": "write_file"}]}


SCRIPTS: list[Script] = [tool_then_text, text_only, text_only, never_answers, refused, malformed]


@pytest.fixture
async def editor_and_requests(
    workspace: Path, tmp_path: Path
) -> AsyncIterator[tuple[EditorClient, list[Any]]]:
    editor, requests = await start(workspace, tmp_path)
    try:
        yield editor, requests
    finally:
        await stop_editor(editor)


async def test_turn_through_the_editors_models(
    editor_and_requests: tuple[EditorClient, list[Any]], workspace: Path
) -> None:
    editor, requests = editor_and_requests
    state = await editor.request("retrace/server/state", {})
    assert state["modelMode"] == "live"

    first = await editor.run_turn("write hello.txt")
    turn = first["turnId"]
    assert (workspace / "hello.txt").read_text("utf-8") == "hi\n", "the tool ran"
    checkpoints = [e["checkpoint"] for e in editor.events_of("checkpointCreated", turn)]
    assert [cp["tool"] for cp in checkpoints] == ["write_file"]
    streamed = "".join(e["text"] for e in editor.events_of("textDelta", turn))
    assert streamed == "Writing it.Done now."
    assert not editor.events_of("error", turn)

    assert len(requests) == 2
    opening = requests[0]
    assert opening["model"] == {"vendor": "retrace-test", "id": "test-model"}
    assert opening["messages"][0]["role"] == "user"
    assert opening["messages"][0]["parts"][-1] == {"kind": "text", "text": "write hello.txt"}
    assert "write_file" in {t["name"] for t in opening["tools"]}
    follow = requests[1]["messages"]
    assert follow[-2]["parts"][-1]["callId"] == "call_w1"
    assert follow[-1]["parts"][0]["kind"] == "toolResult" and follow[-1]["parts"][0]["callId"] == "call_w1"
    usage = editor.events_of("usage", turn)[-1]
    assert usage["costUsd"] is None or usage["costUnknown"]

    # Restore the conversation (and code) to the tool's checkpoint; the next request is valid.
    await editor.request("retrace/checkpoint/restore", {"id": checkpoints[0]["id"], "mode": "both"})
    await editor.run_turn("and now?", session_id=first["sessionId"])
    again = ModelChatParams.model_validate(requests[2])
    calls: set[str] = set()
    for message in again.messages:
        for part in message.parts:
            if part.kind == "toolResult":
                assert part.call_id in calls
        calls = {p.call_id for p in message.parts if p.kind == "toolCall"}
    assert again.messages[-1].parts[-1].model_dump() == {"kind": "text", "text": "and now?"}

    # A cancelled turn cancels the editor's request.
    started = await editor.request("retrace/agent/prompt", {"text": "wait", "sessionId": first["sessionId"]})
    await wait_until(lambda: len(requests) == 4, 20)
    await editor.request("retrace/agent/cancel", {"sessionId": first["sessionId"]})
    await asyncio.wait_for(cancelled.wait(), 20)
    finished = await editor.wait_for_event(
        lambda e: e["kind"] == "turnFinished" and e["turnId"] == started["turnId"]
    )
    assert finished["stopReason"] == "cancelled"

    # The editor's refusal is one line saying what to do.
    refused_turn = await editor.run_turn("once more", session_id=first["sessionId"])
    errors = editor.events_of("error", refused_turn["turnId"])
    assert errors and "allow it" in errors[-1]["message"] and "\n" not in errors[-1]["message"]

    # An answer that is not the protocol's shape is one line; nothing of it is kept.
    bad_turn = await editor.run_turn("and again", session_id=first["sessionId"])
    errors = editor.events_of("error", bad_turn["turnId"])
    assert errors and "could not be read" in errors[-1]["message"]
    assert not editor.events_of("checkpointCreated", bad_turn["turnId"])
    assert not [e for e in editor.events if e["kind"] == "textDelta" and "STRAY" in e["text"]]


async def test_an_extension_without_the_method_gets_one_clear_line(workspace: Path, tmp_path: Path) -> None:
    editor, _ = await start(workspace, tmp_path, answer=False)
    try:
        result = await editor.run_turn("hello")
        errors = editor.events_of("error", result["turnId"])
        assert errors and "update the Retrace extension" in errors[-1]["message"]
    finally:
        await stop_editor(editor)
