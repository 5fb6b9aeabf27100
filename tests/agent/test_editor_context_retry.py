"""A retried prompt carries exactly the attachment the failed one carried (the journaled block),
not the editor's state or the mentioned files' content at the time of the retry."""

from __future__ import annotations

import asyncio

from tests.agent.conftest import Harness, HarnessFactory

from retrace.agent.editor_context import EditorContext


def texts(message: dict[str, object]) -> list[str]:
    content = message["content"]
    assert isinstance(content, list)
    return [b["text"] for b in content if b.get("type") == "text"]


async def test_a_retry_sends_the_failed_prompts_attachment(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness(
        [{"status": 500, "times": 2, "text": "never"}, {"text": "done"}], max_retries=1
    )
    (h.workspace / "notes.md").write_text("FIRST VERSION\n", "utf-8")
    context = EditorContext.model_validate(
        {"path": "notes.md", "selections": [{"lines": {"start": 1, "end": 1}, "text": "FIRST VERSION"}]}
    )
    sid, turn = await h.service.prompt("summarize", context=context, mentions=["notes.md"])
    await asyncio.wait_for(h.service.wait_idle(sid), 60)
    assert h.stop_reasons() == ["error"]
    failed = h.fake.requests[-1]["messages"][-1]
    (h.workspace / "notes.md").write_text("CHANGED SINCE\n", "utf-8")

    _, again = await h.service.prompt("summarize", sid, retry_of=turn)
    await asyncio.wait_for(h.service.wait_idle(sid), 60)
    assert h.stop_reasons() == ["error", "end_turn"]
    sent = h.fake.requests[-1]["messages"][-1]
    assert texts(sent) == texts(failed)
    assert "FIRST VERSION" in texts(sent)[-2] and "CHANGED SINCE" not in str(sent)
    started = h.host.of("turnStarted")
    assert started[-1].attachments == started[0].attachments == ["notes.md:1 (selection)", "@notes.md"]
    view = await h.service.conversation(sid)
    assert view.messages[0].attachments == ["notes.md:1 (selection)", "@notes.md"]
    # by message id too (the chat after a reload knows the withdrawn prompt's message id)
    [withdrawn] = view.withdrawn
    assert withdrawn.turn_id == turn and again != turn
