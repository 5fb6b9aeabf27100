"""What the chat shows per turn, owned by the server: each turn's tokens and cost (live in the
``usage`` events, and in ``retrace/conversation/get`` after a reload) and each tool call's
checkpoint (the chat's inline diff and "Checkpoint" link)."""

from __future__ import annotations

import pytest
from tests.lsp.lsp_support import EditorClient

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _sum(events: list[dict[str, object]], key: str) -> int:
    return sum(int(str(e[key])) for e in events)


async def test_each_turn_carries_its_own_usage_live_and_after_a_reload(
    editor: EditorClient, session_model: FakeModel
) -> None:
    first = await editor.run_turn("first task")
    session_id = first["sessionId"]
    second = await editor.run_turn("second task", session_id=session_id)
    conversation = await editor.request("retrace/conversation/get", {"sessionId": session_id})
    per_turn = conversation["turnUsage"]
    totals = {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0, "cacheCreationInputTokens": 0}
    for turn in (first, second):
        events = editor.events_of("usage", turn["turnId"])
        assert events, "the fake model reports usage"
        usage = per_turn[turn["turnId"]]
        for key in totals:
            assert usage[key] == _sum(events, key)
            totals[key] += usage[key]
        # live: the turn's running totals, as the reload has them at the end
        assert events[-1]["turn"] == usage
        assert events[0]["turn"]["outputTokens"] == events[0]["outputTokens"]
    for key, value in totals.items():
        assert conversation["usage"][key] == value
    assert sum(u["costUsd"] for u in per_turn.values()) == pytest.approx(conversation["usage"]["costUsd"])


async def test_each_tool_call_names_its_checkpoint(editor: EditorClient, session_model: FakeModel) -> None:
    turn = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", turn["turnId"])]
    by_call = {cp["toolCallId"]: cp["id"] for cp in created if cp["kind"] == "tool"}
    assert by_call
    conversation = await editor.request("retrace/conversation/get", {"sessionId": turn["sessionId"]})
    assert conversation["toolCheckpoints"] == by_call
