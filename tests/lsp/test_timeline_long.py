"""A 10,000-checkpoint session through the real server: the first answer is an outline plus the
newest page (bounded in size, whatever the history), older pages follow the cursor without gaps or
overlaps, and filters by tool, path and text return exactly the matching rows, paged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.seed_long import cached, copy_to
from tests.lsp.lsp_support import EditorClient, start_editor, stop_editor, validate

from retrace.app.timeline.pages import WORKSPACE_IN_SIGHT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PAGE = 100
FIRST_ANSWER_BYTES = 256 * 1024
"""A page of 100 rows is ≈80 KiB; the whole session would be ≈8 MiB."""


def rows_of(story: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for i in story["items"] for r in (i["rows"] if i["kind"] == "turn" else [i])]


async def tree(editor: EditorClient, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/timeline/tree", params)
    validate("#/$defs/TimelineTreeResult", result)
    return result


@pytest.mark.timeout(1200)  # the first run on a machine generates the 10,000-step store (≈90 s)
async def test_10k_session_pages_and_filters(tmp_path: Path) -> None:
    seed = copy_to(cached(), tmp_path / "ws", tmp_path / "store")
    sid = seed["sessionId"]
    # The seed holds more than the default 5,000 checkpoints: keep them, or the automatic cleanup
    # trims the session at start-up (tests/lsp/test_auto_gc.py covers that).
    keep_all = {"retention": {"maxCheckpoints": 50_000}}
    editor = await start_editor(tmp_path / "ws", tmp_path / "store", settings=keep_all)
    try:
        first = await tree(editor, outline=True, maxRows=PAGE)
        size = len(json.dumps(first))
        assert size < FIRST_ANSWER_BYTES, f"first answer {size} bytes"
        [story] = [s for s in first["sessions"] if s["session"]["id"] == sid]
        assert story["rowCount"] == 10_000 and story["outline"] is False
        assert len(rows_of(story)) == PAGE and story["rowsOmitted"] == 10_000 - PAGE
        others = [s for s in first["sessions"] if s is not story]
        assert all(s["outline"] and s["items"] == [] for s in others if not s["workspace"])
        assert all(s["rowCount"] <= WORKSPACE_IN_SIGHT for s in others if not s["outline"])

        everything = await editor.request("retrace/timeline/get", {"sessionId": sid})
        tools = [c["id"] for c in everything["checkpoints"] if c["kind"] == "tool"]
        walked = [r["checkpoint"]["id"] for r in rows_of(story)]
        before = story["nextBefore"]
        for _ in range(3):
            [older] = (await tree(editor, sessionId=sid, before=before, maxRows=PAGE))["sessions"]
            walked[:0] = [r["checkpoint"]["id"] for r in rows_of(older)]
            before = older["nextBefore"]
        assert walked == tools[-4 * PAGE :], "pages are contiguous, newest last"

        [by_tool] = (await tree(editor, filter={"tool": "write_file"}, maxRows=50))["sessions"]
        assert by_tool["rowCount"] == seed["tools"]["write_file"]
        assert len(rows_of(by_tool)) == 50
        assert {r["checkpoint"]["tool"] for r in rows_of(by_tool)} == {"write_file"}

        in_story = [c for c in everything["checkpoints"] if c["kind"] == "tool"]  # not the first capture
        wanted = [c["id"] for c in in_story if any("mod_07" in f["path"] for f in c["files"])]
        matching = (await tree(editor, filter={"path": "mod_07"}, maxRows=PAGE))["sessions"]
        [by_path] = [s for s in matching if s["session"]["id"] == sid]
        assert by_path["rowCount"] == len(wanted) > PAGE
        [older] = (await tree(editor, sessionId=sid, filter={"path": "mod_07"}, before=by_path["nextBefore"],
                              maxRows=PAGE))["sessions"]  # fmt: skip
        got = [r["checkpoint"]["id"] for r in rows_of(older) + rows_of(by_path)]
        assert got == wanted[-2 * PAGE :]

        [by_text] = (await tree(editor, filter={"text": "BATCH 499 "}, maxRows=PAGE))["sessions"]
        assert by_text["rowCount"] == 20 and [t["number"] for t in by_text["items"]] == [499]

        with pytest.raises(Exception, match="cursor"):
            await tree(editor, sessionId=sid, before="no-such-row")
    finally:
        await stop_editor(editor)
