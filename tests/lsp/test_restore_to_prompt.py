"""``retrace/restore/toPrompt`` through the real server and the fake model: a restore point at
every prompt (a turn with no tool call included), the end of a turn keeping its final answer, the
restored-away prompt offered back, and an edited prompt resent on the fork."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def prompts_model() -> Iterator[FakeModel]:
    model = fake_model("prompts")
    yield model
    model.stop()


@pytest.fixture
async def client(workspace: Path, store: Path, prompts_model: FakeModel) -> AsyncIterator[EditorClient]:
    editor = await start_editor(workspace, store, env=model_env(prompts_model), settings=AUTO)
    yield editor
    await stop_editor(editor)


async def three_turns(editor: EditorClient) -> tuple[str, list[str]]:
    first = await editor.run_turn("first prompt")
    sid = first["sessionId"]
    second = await editor.run_turn("second prompt", session_id=sid)
    third = await editor.run_turn("third prompt", session_id=sid)
    return sid, [first["turnId"], second["turnId"], third["turnId"]]


async def to_prompt(editor: EditorClient, sid: str, prompt: str, mode: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request(
        "retrace/restore/toPrompt", {"sessionId": sid, "prompt": prompt, "mode": mode, **extra}
    )
    return result


def texts(conversation: dict[str, Any]) -> list[str]:
    return [b["text"] for m in conversation["messages"] for b in m["content"] if b.get("type") == "text"]


async def test_before_a_turn_without_tool_calls_is_exact(client: EditorClient, workspace: Path) -> None:
    sid, turns = await three_turns(client)
    assert (workspace / "one.txt").exists() and (workspace / "three.txt").exists()
    # Before prompt 3 = after turn 2 (which made no checkpoint): one.txt, not three.txt; the
    # conversation ends with turn 2's answer; prompt 3 is offered back.
    result = await to_prompt(client, sid, turns[2], "both")
    assert result["outcome"]["kind"] == "applied", result
    assert result["exact"] is True and result["promptText"] == "third prompt"
    assert result["restoredPrompt"] == "third prompt"
    assert (workspace / "one.txt").read_text() == "one\n" and not (workspace / "three.txt").exists()
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert texts(conversation)[-1] == "Turn two: just an answer."
    assert conversation["head"] == result["conversationHead"]


async def test_before_prompt_two_conversation_only_by_message_id(
    client: EditorClient, workspace: Path
) -> None:
    sid, turns = await three_turns(client)
    view = await client.request("retrace/conversation/get", {"sessionId": sid})
    [prompt2] = [m["id"] for m in view["messages"] if m["kind"] == "prompt" and m["turnId"] == turns[1]]
    result = await to_prompt(client, sid, prompt2, "conversation")
    assert result["restoredPrompt"] == "second prompt" and result["turnId"] == turns[1]
    assert (workspace / "three.txt").exists()  # code untouched
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert texts(conversation)[-1] == "Turn one done."


async def test_before_the_first_prompt_empties_the_conversation(
    client: EditorClient, workspace: Path
) -> None:
    sid, turns = await three_turns(client)
    result = await to_prompt(client, sid, turns[0], "both")
    assert result["outcome"]["kind"] == "applied"
    assert result["conversationHead"] is None and result["restoredPrompt"] == "first prompt"
    assert not (workspace / "one.txt").exists() and not (workspace / "three.txt").exists()
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert conversation["messages"] == []


async def test_end_of_a_turn_keeps_its_final_answer(client: EditorClient, workspace: Path) -> None:
    sid, turns = await three_turns(client)
    result = await to_prompt(client, sid, turns[0], "both", point="end")
    assert result["outcome"]["kind"] == "applied"
    assert (workspace / "one.txt").exists() and not (workspace / "three.txt").exists()
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert texts(conversation)[-1] == "Turn one done."
    assert result["restoredPrompt"] == "second prompt"
    # The end of the turn with no tool call: the code of turn 1's end, its answer kept.
    again = await to_prompt(client, sid, turns[1], "conversation", point="end")
    assert "restoredPrompt" not in again  # going forward again leaves no prompt out
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert texts(conversation)[-1] == "Turn two: just an answer."


async def test_edit_and_resend_forks_from_the_prompts_parent(client: EditorClient) -> None:
    sid, turns = await three_turns(client)
    await to_prompt(client, sid, turns[1], "conversation")
    resent = await client.run_turn("second prompt, edited", session_id=sid)
    assert resent["sessionId"] == sid
    conversation = await client.request("retrace/conversation/get", {"sessionId": sid})
    said = texts(conversation)
    assert said[-2:] == ["second prompt, edited", "Answer to the edited prompt."]
    assert "Turn two: just an answer." not in said and "third prompt" not in said
    tree = await client.request("retrace/timeline/get", {"sessionId": sid})
    assert tree["head"] is not None


@pytest.mark.parametrize(
    ("prompt", "extra", "code"),
    [
        ("no-such-prompt", {}, "promptPointUnknown"),
        ("", {}, "promptPointUnknown"),
        ("x" * 5000, {}, "promptPointUnknown"),
        ("turn", {"sessionId": "no-such-session"}, "unknown session"),
        ("turn", {"point": "middle"}, "point"),
        ("turn", {"mode": "everything"}, "mode"),
        ("turn", {"task": {"sessionId": "s", "taskId": "t"}}, "subagent"),
    ],
)
async def test_bad_prompts_are_refused_and_change_nothing(
    client: EditorClient, workspace: Path, prompt: str, extra: dict[str, Any], code: str
) -> None:
    sid, _turns = await three_turns(client)
    before = await client.request("retrace/conversation/get", {"sessionId": sid})
    with pytest.raises(Exception) as err:
        await to_prompt(client, sid, _turns[1] if prompt == "turn" else prompt, "both", **extra)
    assert code in str(err.value) or "no prompt" in str(err.value), str(err.value)
    assert len(str(err.value)) < 600
    after = await client.request("retrace/conversation/get", {"sessionId": sid})
    assert after["head"] == before["head"] and (workspace / "three.txt").exists()


async def test_before_a_quiet_turn_after_a_restore_is_the_restored_state(
    client: EditorClient, workspace: Path
) -> None:
    """The code in force when a prompt was sent, even when no checkpoint of the session shows it:
    a code restore between turns, then a turn with no tool call, then one that writes."""
    first = await client.run_turn("first prompt")
    sid = first["sessionId"]
    undone = await to_prompt(client, sid, first["turnId"], "code")
    assert undone["outcome"]["kind"] == "applied" and not (workspace / "one.txt").exists()
    quiet = await client.run_turn("second prompt", session_id=sid)
    await client.run_turn("third prompt", session_id=sid)
    assert (workspace / "three.txt").exists()
    result = await to_prompt(client, sid, quiet["turnId"], "both")
    assert result["outcome"]["kind"] == "applied" and result["exact"] is True
    assert not (workspace / "three.txt").exists()
    assert not (workspace / "one.txt").exists()  # not the files of the last turn that wrote


async def test_a_checkpoint_restore_names_the_prompt_it_left_out(client: EditorClient) -> None:
    """Every conversation restore (the timeline's too), not only a prompt's: the first prompt of
    the old branch that the new one leaves out, in the user's words."""
    _sid, turns = await three_turns(client)
    [cp] = [e["checkpoint"] for e in client.events_of("checkpointCreated", turns[0])]
    result = await client.request("retrace/checkpoint/restore", {"id": cp["id"], "mode": "conversation"})
    assert result["restoredPrompt"] == "second prompt"
    code_only = await client.request("retrace/checkpoint/restore", {"id": cp["id"], "mode": "code"})
    assert "restoredPrompt" not in code_only
