"""The real server process with the fake Messages API: project instructions reach the system
prompt (a nested AGENTS.md once its folder is touched), and a conversation past the configured
share of the context window is compacted, announced, and restorable from before."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, model_env, start_editor, stop_editor

from retrace.offline import FakeModel, Scenario

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUMMARY = "SUMMARY: read src/app.py, wrote a.txt; next: b.txt."


def call(tool: str, tokens: int, **args: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": tool, "input": args}], "usage": {"inputTokens": tokens}}


@pytest.fixture
def model() -> Iterator[FakeModel]:
    scenario = Scenario.model_validate(
        {
            "responses": [
                call("read_file", 1000, path="src/app.py"),
                call("write_file", 1000, path="a.txt", content="a\n"),
                {"text": "turn one done", "usage": {"inputTokens": 1000}},
                # 120k: past compactAt 0.5 of the 200k window (under the default 0.8).
                call("write_file", 120_000, path="b.txt", content="b\n"),
                {"text": SUMMARY},
                {"text": "all done"},
            ]
        }
    )
    fake = FakeModel(scenario)
    fake.start()
    yield fake
    fake.stop()


def system_of(request: dict[str, Any]) -> str:
    system = request["system"]
    return system if isinstance(system, str) else "".join(b["text"] for b in system)


async def test_instructions_and_compaction_over_the_server(
    workspace: Path, store: Path, model: FakeModel, tmp_path: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Root rule: keep it small.\n", "utf-8")
    (workspace / "src" / "AGENTS.md").write_text("Src rule: type hints everywhere.\n", "utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("OUTSIDE secret rule\n", "utf-8")
    os.symlink(outside, workspace / "CLAUDE.md")
    settings = {**AUTO, "agent": {"autoCompact": True, "compactAt": 0.5}}
    editor = await start_editor(workspace, store, env=model_env(model), settings=settings)
    try:
        first = await editor.run_turn("start: read the app")
        sid = first["sessionId"]
        systems = [system_of(r) for r in model.requests]
        assert "Root rule: keep it small." in systems[0]
        assert "Src rule" not in systems[0]
        assert "Src rule: type hints everywhere." in systems[1]  # src/ was touched by read_file
        assert not any("OUTSIDE" in s for s in systems)

        second = await editor.run_turn("second: b.txt now", sid)
        told = editor.events_of("contextCompacted", second["turnId"])
        assert len(told) == 1 and told[0]["tokensBefore"] >= 120_000
        summary_cps = [
            e["checkpoint"]
            for e in editor.events_of("checkpointCreated", second["turnId"])
            if e["checkpoint"]["kind"] == "summary"
        ]
        assert [c["id"] for c in summary_cps] == [told[0]["checkpointId"]]
        finished = editor.events_of("turnFinished", second["turnId"])
        assert finished[-1]["stopReason"] == "end_turn"
        assert model.statuses == [200] * len(model.requests)
        after = model.requests[-1]
        assert SUMMARY in after["messages"][0]["content"][0]["text"]
        assert "start: read the app" not in str(after["messages"])

        view = await editor.request("retrace/conversation/get", {"sessionId": sid})
        kinds = [m["kind"] for m in view["messages"]]
        assert kinds.count("summary") == 1 and kinds[0] == "prompt"  # originals, then the summary

        # Restore the conversation to the first tool call: the original messages come back.
        read_cp = editor.events_of("checkpointCreated", first["turnId"])[0]["checkpoint"]
        restored = await editor.request(
            "retrace/checkpoint/restore", {"id": read_cp["id"], "mode": "conversation"}
        )
        assert restored["conversationHead"] is not None
        back = await editor.request("retrace/conversation/get", {"sessionId": sid})
        assert "start: read the app" in str(back["messages"][0]["content"])
        assert all(m["kind"] != "summary" for m in back["messages"])
    finally:
        await stop_editor(editor)
