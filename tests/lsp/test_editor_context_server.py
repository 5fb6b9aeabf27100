"""Editor context and ``@file`` mentions through the real server process and the fake Messages
API: what the model receives, that the cached prefix is unchanged, that a mention outside the
workspace is never read, that the journal keeps the attachment (conversation view, restart) and
the ``retrace/workspace/files`` completion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, model_env, start_editor, stop_editor

from retrace.offline import FakeModel
from retrace.offline.prompt_cache import prefix_blocks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SECRET = "TOP-SECRET-OUTSIDE"


async def prompt(editor: EditorClient, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/agent/prompt", params)
    turn_id = result["turnId"]
    await editor.wait_for_event(
        lambda e: e["kind"] == "turnFinished" and e.get("turnId") == turn_id, limit_s=60
    )
    return result


def texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


CONTEXT = {
    "path": "src/app.py",
    "language": "python",
    "selections": [{"lines": {"start": 1, "end": 2}, "text": "SELECTED-LINES-ONE\nSELECTED-LINES-TWO"}],
    "visible": {"start": 1, "end": 30},
}


async def test_the_model_receives_the_context_block_after_every_cached_prefix(
    editor: EditorClient, session_model: FakeModel, workspace: Path
) -> None:
    (workspace.parent / "secret.txt").write_text(SECRET, "utf-8")
    first = await editor.run_turn("first task")
    previous = session_model.requests[-1]
    sent = len(session_model.requests)

    second = await prompt(
        editor,
        {
            "text": "explain this",
            "sessionId": first["sessionId"],
            "context": CONTEXT,
            "mentions": ["README.md", "../secret.txt", "logo.bin"],
        },
    )
    body = session_model.requests[sent]
    assert set(session_model.statuses) == {200}  # the fake refuses misplaced breakpoints
    last = body["messages"][-1]
    assert last["role"] == "user"
    *attached, own = texts(last)
    assert own == "explain this"
    block = attached[-1]
    assert block.startswith("<editor-context>")
    assert "Active file: src/app.py (python)" in block
    assert "Selected lines 1-2:\n```python\nSELECTED-LINES-ONE\nSELECTED-LINES-TWO\n```" in block
    assert "Visible lines: 1-30" in block
    assert '<file path="README.md">\n# Sample\n\nA small project.\n</file>' in block
    assert '<file path="../secret.txt" status="not attached: outside the workspace"/>' in block
    assert '<file path="logo.bin" status="not attached: binary"/>' in block
    assert all(SECRET not in json.dumps(b) for b in session_model.requests)

    # The previous request is an unchanged prefix of this one: its cache is read whole.
    before, now = prefix_blocks(previous), prefix_blocks(body)
    assert now[len(before) - 1].key == before[-1].key
    assert session_model.usages[sent]["cache_read_input_tokens"] == before[-1].tokens
    # the breakpoints: tools and system where they were, the end of the previous request, the
    # new last block (the attachment sits between the last two, so the prefix is untouched)
    stable = len(body["tools"]) + len(body["system"])
    marks = [i for i, b in enumerate(now) if b.ttl is not None]
    assert marks == [i for i, b in enumerate(before[:stable]) if b.ttl is not None] + [
        len(before) - 1,
        len(now) - 1,
    ]
    assert "cache_control" in last["content"][-1]
    assert all("cache_control" not in b for b in last["content"][:-1])

    started = editor.events_of("turnStarted", second["turnId"])[0]
    summary = [
        "src/app.py:1-2 (selection)",
        "@README.md",
        "@../secret.txt (not attached: outside the workspace)",
        "@logo.bin (not attached: binary)",
    ]
    assert started["attachments"] == summary
    view = await editor.request("retrace/conversation/get", {"sessionId": first["sessionId"]})
    [shown] = [m for m in view["messages"] if m.get("turnId") == second["turnId"] and m["kind"] == "prompt"]
    assert shown["attachments"] == summary
    assert texts(shown)[-1] == "explain this"
    assert texts(shown)[-2] == block


async def test_a_restarted_server_sends_the_journaled_attachment_again(workspace: Path, store: Path) -> None:
    from tests.lsp.lsp_support import fake_model

    model = fake_model("session")
    try:
        editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
        try:
            first = await prompt(editor, {"text": "look", "context": CONTEXT, "mentions": ["README.md"]})
        finally:
            await stop_editor(editor)
        block = texts(model.requests[0]["messages"][-1])[-2]
        sent = len(model.requests)
        editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
        try:
            await editor.run_turn("go on", session_id=first["sessionId"])
            view = await editor.request("retrace/conversation/get", {"sessionId": first["sessionId"]})
        finally:
            await stop_editor(editor)
    finally:
        model.stop()
    resent = model.requests[sent]["messages"][0]
    assert texts(resent)[-2:] == [block, "look"]
    assert view["messages"][0]["attachments"] == ["src/app.py:1-2 (selection)", "@README.md"]


async def test_workspace_files_completes_recorded_files_only(workspace: Path, store: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n", "utf-8")
    (workspace / "build").mkdir()
    (workspace / "build" / "app_out.js").write_text("x", "utf-8")
    editor = await start_editor(workspace, store, settings=AUTO)
    try:
        found = await editor.request("retrace/workspace/files", {"query": "app", "limit": 10})
        everything = await editor.request("retrace/workspace/files", {})
    finally:
        await stop_editor(editor)
    assert found["paths"][0] == "src/app.py"
    assert not any(p.startswith("build/") for p in everything["paths"])
    assert "README.md" in everything["paths"]
