"""``retrace/file/history`` over a real server process: after a turn that edits a file, the file's
history lists that tool call and the baseline, each version's content is the one the checkpoint
serves, and a path outside the workspace is a clear Retrace error."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from tests.lsp.lsp_support import EditorClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_file_history_of_an_edited_file(editor: EditorClient, workspace: Path) -> None:
    turn = await editor.run_turn("first task")
    [edit] = [
        e["checkpoint"]
        for e in editor.events_of("checkpointCreated", turn["turnId"])
        if e["checkpoint"]["tool"] == "edit_file"
    ]
    result = await editor.request("retrace/file/history", {"path": "src/app.py"})
    assert result["path"] == "src/app.py" and result["nextCursor"] is None
    rows = [(v["checkpointId"], v["kind"], v["change"], v["summary"]) for v in result["versions"]]
    assert rows[0] == (edit["id"], "tool", "modified", "+1 −1")
    assert [r[1:3] for r in rows[1:]] == [("baseline", "created")]
    assert result["versions"][0]["sessionId"] == turn["sessionId"]
    for version in result["versions"]:
        content = await editor.request(
            "retrace/checkpoint/fileContent", {"id": version["checkpointId"], "path": "src/app.py"}
        )
        assert hashlib.sha256(content["text"].encode()).hexdigest() == version["hash"]

    page = await editor.request("retrace/file/history", {"path": "src/app.py", "limit": 1})
    assert [v["checkpointId"] for v in page["versions"]] == [edit["id"]] and page["nextCursor"] == edit["id"]
    only = await editor.request("retrace/file/history", {"path": "hello.txt", "sessionId": turn["sessionId"]})
    assert [v["change"] for v in only["versions"]] == ["created"]

    error = await editor.request_error("retrace/file/history", {"path": "../outside.txt"})
    assert "outside the workspace" in error.message
    assert error.data == {"code": "pathOutsideWorkspace"}
