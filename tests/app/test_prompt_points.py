"""The pure resolution of a prompt's restore points (:mod:`retrace.app.prompt_points`), table-tested
on conversations folded from journal events as the agent writes them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.journal_events import one, typed

from retrace.agent.conversation import Conversation
from retrace.app.prompt_points import (
    CheckpointRef,
    PromptPointUnknown,
    resolve,
    restored_away_prompt,
)


def msg(mid: str, parent: str | None, role: str, kind: str, turn: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": mid,
        "parent": parent,
        "role": role,
        "kind": kind,
        "turnId": turn,
        "content": [{"type": "text", "text": text}],
    }


def turn(tid: str, head: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "turn", "turnId": tid, "text": tid}
    if head is not None:
        event["headCheckpoint"] = head
    return event


def session(recorded: bool = True) -> Conversation:
    """t1: a tool call (checkpoint c1); t2: an answer only; t3: a tool call (c3)."""
    events = [
        turn("t1", "c0" if recorded else None),
        msg("p1", None, "user", "prompt", "t1", "first"),
        msg("a1", "p1", "assistant", "assistant", "t1", "tool"),
        msg("r1", "a1", "user", "toolResults", "t1", "ok"),
        msg("e1", "r1", "assistant", "assistant", "t1", "one done"),
        turn("t2", "c1" if recorded else None),
        msg("p2", "e1", "user", "prompt", "t2", "second"),
        msg("e2", "p2", "assistant", "assistant", "t2", "two done"),
        turn("t3", "c1" if recorded else None),
        msg("p3", "e2", "user", "prompt", "t3", "third"),
        msg("a3", "p3", "assistant", "assistant", "t3", "tool"),
        msg("r3", "a3", "user", "toolResults", "t3", "ok"),
        msg("e3", "r3", "assistant", "assistant", "t3", "three done"),
    ]
    return Conversation.from_events("s", typed(events))


CPS = [CheckpointRef("c1", "c0", "t1"), CheckpointRef("c3", "c1", "t3")]


@pytest.mark.parametrize(
    ("ref", "point", "recorded", "checkpoint", "head", "exact"),
    [
        ("t1", "before", True, "c0", None, True),
        ("p1", "before", True, "c0", None, True),
        ("t2", "before", True, "c1", "e1", True),  # a turn with no tool call: exact
        ("t3", "before", True, "c1", "e2", True),
        ("t1", "end", True, "c1", "e1", True),
        ("t2", "end", True, "c1", "e2", True),  # no checkpoint in the turn: the code before it
        ("t3", "end", True, "c3", "e3", True),
        # A journal written before turns recorded the head: derived, and said so.
        ("t1", "before", False, "c0", None, False),
        ("t2", "before", False, "c1", "e1", False),
        ("t3", "before", False, "c1", "e2", False),
        ("t3", "end", False, "c3", "e3", True),
    ],
)
def test_resolve(
    ref: str, point: Any, recorded: bool, checkpoint: str, head: str | None, exact: bool
) -> None:
    found = resolve(session(recorded), ref, point, CPS)
    assert (found.checkpoint, found.head, found.exact) == (checkpoint, head, exact)


def test_prompt_text_is_the_users_words() -> None:
    assert resolve(session(), "t3", "before", CPS).prompt_text == "third"


@pytest.mark.parametrize("ref", ["", "nope", "a1", "e2", "r1", "x" * 10_000, "t9"])
def test_unknown_prompts_are_refused_in_one_short_line(ref: str) -> None:
    with pytest.raises(PromptPointUnknown) as err:
        resolve(session(), ref, "before", CPS)
    assert len(str(err.value)) < 200 and "\n" not in str(err.value)


def test_a_withdrawn_turn_has_no_end() -> None:
    conv = session()
    conv.apply(one(turn("t4", "c3")))
    conv.apply(one(msg("p4", "e3", "user", "prompt", "t4", "fourth")))
    conv.apply(one({"type": "promptWithdrawn", "messageId": "p4", "turnId": "t4", "reason": "error"}))
    with pytest.raises(PromptPointUnknown):
        resolve(conv, "t4", "end", CPS)
    assert resolve(conv, "t4", "before", CPS).checkpoint == "c3"


def test_no_restore_point_at_all() -> None:
    conv = Conversation.from_events(
        "s", typed([turn("t1", None), msg("p1", None, "user", "prompt", "t1", "x")])
    )
    with pytest.raises(PromptPointUnknown):
        resolve(conv, "t1", "before", [])


def test_restore_results_under_a_turn_id_are_not_its_end() -> None:
    conv = session()
    conv.apply(one(msg("rr", "a3", "user", "restoreResults", "t3", "not run")))
    assert resolve(conv, "t3", "end", CPS).head == "e3"


@pytest.mark.parametrize(
    ("old", "new", "offered"),
    [
        ("e3", "e1", "second"),
        ("e3", "e2", "third"),
        ("e3", None, "first"),
        ("e1", "e3", None),  # forward: nothing left out
        ("e3", "e3", None),
        (None, "e1", None),
        ("e3", "a3", None),  # inside turn 3: its prompt stays
    ],
)
def test_restored_away_prompt(old: str | None, new: str | None, offered: str | None) -> None:
    assert restored_away_prompt(session(), old, new) == offered
