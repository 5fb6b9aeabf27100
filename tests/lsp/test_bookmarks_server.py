"""Bookmarks through the real server: ``retrace/bookmark/create`` records a named checkpoint of
the state now (and, during an agent's turn, names the last checkpoint's state without capturing a
file a tool is writing), ``retrace/bookmark/name`` names an older row or removes its name; the
timeline shows the names, filters to them, and ``retrace/timeline/get`` offers them first; a bad
name is refused with the reason and records nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor

from retrace.offline import FakeModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def model() -> Iterator[FakeModel]:
    m = fake_model("bookmarks")
    yield m
    m.stop()


@pytest.fixture
async def client(workspace: Path, store: Path, model: FakeModel) -> AsyncIterator[EditorClient]:
    editor = await start_editor(workspace, store, env=model_env(model), settings=AUTO)
    yield editor
    await stop_editor(editor)


def rows(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for story in tree["sessions"]:
        for item in story["items"]:
            out.extend(item["rows"] if item["kind"] == "turn" else [item])
    return out


async def tree(editor: EditorClient, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/timeline/tree", params)
    return result


async def test_bookmark_now_name_a_row_filter_and_order(client: EditorClient, workspace: Path) -> None:
    await client.run_turn("write a")
    (workspace / "mine.txt").write_text("typed by me\n")
    made = await client.request("retrace/bookmark/create", {"name": "  before the refactor "})
    cp = made["checkpoint"]
    assert made["name"] == "before the refactor" and cp["kind"] == "manual"
    assert [f["path"] for f in cp["files"]] == ["mine.txt"]  # every change since the last checkpoint
    everything = rows(await tree(client))
    by_id = {r["checkpoint"]["id"]: r for r in everything}
    assert by_id[cp["id"]]["bookmark"] == "before the refactor"
    [tool_row] = [r for r in everything if r["checkpoint"]["kind"] == "tool"]
    assert "bookmark" not in tool_row

    named = await client.request(
        "retrace/bookmark/name", {"checkpointId": tool_row["checkpoint"]["id"], "name": "a works"}
    )
    assert named == {"checkpointId": tool_row["checkpoint"]["id"], "name": "a works"}
    raw = await tree(client, filter={"bookmarks": True})
    only = rows(raw)
    assert {r["checkpoint"]["id"]: r["bookmark"] for r in only} == {
        cp["id"]: "before the refactor",
        tool_row["checkpoint"]["id"]: "a works",
    }
    listed = await client.request("retrace/timeline/get", {})
    assert [b["checkpointId"] for b in listed["bookmarks"]] == [cp["id"], tool_row["checkpoint"]["id"]]

    removed = await client.request("retrace/bookmark/name", {"checkpointId": cp["id"], "name": ""})
    assert removed["name"] is None
    only = rows(await tree(client, filter={"bookmarks": True}))
    assert [r["checkpoint"]["id"] for r in only] == [tool_row["checkpoint"]["id"]]


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        ("retrace/bookmark/create", {"name": ""}, "needs a name"),
        ("retrace/bookmark/create", {"name": "two\nlines"}, "U+000A"),
        ("retrace/bookmark/create", {"name": "x" * 101}, "at most 100"),
        ("retrace/bookmark/name", {"checkpointId": "zzzzzzzz", "name": "x"}, "zzzzzzzz"),
        ("retrace/bookmark/name", {"checkpointId": "HEAD", "name": "\u202eevil"}, "U+202E"),
        ("retrace/bookmark/create", {"name": 5}, "name"),
    ],
)
async def test_a_bad_request_is_refused_with_the_reason(
    client: EditorClient, method: str, params: dict[str, Any], says: str
) -> None:
    before = await client.request("retrace/timeline/get", {})
    if params.get("checkpointId") == "HEAD":
        params = {**params, "checkpointId": before["head"]}
    error = await client.request_error(method, params)
    assert says in str(error)
    after = await client.request("retrace/timeline/get", {})
    assert len(after["checkpoints"]) == len(before["checkpoints"]) and after["bookmarks"] == []


async def test_a_bookmark_during_a_turn_never_takes_a_file_a_tool_is_writing(
    client: EditorClient, workspace: Path
) -> None:
    first = await client.run_turn("write a")
    result = await client.request("retrace/agent/prompt", {"text": "slow", "sessionId": first["sessionId"]})
    for _ in range(200):  # the command has written half of its file
        if (workspace / "half.txt").exists():
            break
        await asyncio.sleep(0.05)
    made = await client.request("retrace/bookmark/create", {"name": "mid turn"})
    assert made["checkpoint"]["files"] == [] and made["checkpoint"]["meta"]["duringTurn"] is True
    await client.wait_for_event(lambda e: e["kind"] == "turnFinished" and e.get("turnId") == result["turnId"])
    everything = rows(await tree(client))
    [command] = [r for r in everything if r["checkpoint"].get("tool") == "run_command"]
    assert [f["path"] for f in command["checkpoint"]["files"]] == ["half.txt"]  # the tool's, whole
    assert (workspace / "half.txt").read_text() == "half done\n"
    assert any(r.get("bookmark") == "mid turn" for r in everything)
