"""Per-hunk restore through the real server (``retrace/restore/hunks`` / ``retrace/restore/hunk``):
undo one of two hunks and keep the other, exact bytes (CRLF), a restore checkpoint that
``retrace/restore/undoLast`` takes back, and every refusal (stale hash, unsaved buffer, binary,
a path outside the workspace, an unknown hunk) writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import APP_PY, EditorClient

from retrace.app.hunks import text_hash

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TAIL = "# added at the end\n"


async def first_turn(editor: EditorClient, workspace: Path) -> str:
    """Run turn 1 (app.py: return 1 → return 2), add a second change at the end of app.py; the
    checkpoint before the agent's edit of app.py."""
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    app = workspace / "src" / "app.py"
    app.write_text(app.read_text("utf-8") + TAIL, "utf-8")
    return str(created[0]["id"])


async def hunks_of(editor: EditorClient, cp: str, path: str) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request("retrace/restore/hunks", {"checkpoint": cp, "path": path})
    return result


async def test_undo_one_hunk_keep_the_other_and_undo_the_restore(
    editor: EditorClient, workspace: Path
) -> None:
    cp = await first_turn(editor, workspace)
    app = workspace / "src" / "app.py"
    two = app.read_text("utf-8")
    listed = await hunks_of(editor, cp, "src/app.py")
    assert listed["currentHash"] == text_hash(two)
    first, second = listed["hunks"]
    assert first["currentText"] == "    return 2\n" and first["baseText"] == "    return 1\n"
    assert second["currentText"] == TAIL and second["baseText"] == ""

    result = await editor.request(
        "retrace/restore/hunk",
        {"checkpoint": cp, "path": "src/app.py", "hunk": first["id"], "expectedHash": listed["currentHash"]},
    )
    assert app.read_text("utf-8") == APP_PY + TAIL  # the agent's hunk undone, the other kept
    restore_cp = result["checkpoint"]
    assert restore_cp["kind"] == "restore" and restore_cp["meta"]["hunk"]["path"] == "src/app.py"
    assert result["currentHash"] == text_hash(APP_PY + TAIL)
    timeline = await editor.request("retrace/timeline/get", {})
    assert timeline["head"] == restore_cp["id"]
    tree = await editor.request("retrace/timeline/tree", {})
    assert "Restored a hunk of src/app.py" in json.dumps(tree)  # the row says what it did

    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["outcome"]["kind"] == "applied", undone
    assert app.read_text("utf-8") == two  # Undo last restore brings the hunk back


async def test_refusals_write_nothing(editor: EditorClient, workspace: Path) -> None:
    cp = await first_turn(editor, workspace)
    app = workspace / "src" / "app.py"
    before = app.read_text("utf-8")
    listed = await hunks_of(editor, cp, "src/app.py")
    first = listed["hunks"][0]["id"]

    def ask(**extra: Any) -> dict[str, Any]:
        return {
            "checkpoint": cp,
            "path": "src/app.py",
            "hunk": first,
            "expectedHash": listed["currentHash"],
            **extra,
        }

    # The file changed since the hunks were listed: a conflict, never a silent overwrite.
    app.write_text(before + "typed later\n", "utf-8")
    error = await editor.request_error("retrace/restore/hunk", ask())
    assert "changed since" in str(error)
    assert app.read_text("utf-8") == before + "typed later\n"
    app.write_text(before, "utf-8")

    # Unsaved typing in the editor: the listed hash is the buffer's; restoring is refused.
    uri = editor.open_document("src/app.py")
    editor.type_in_document(uri, before + "unsaved\n")
    relisted = await hunks_of(editor, cp, "src/app.py")
    assert relisted["currentHash"] == text_hash(before + "unsaved\n")
    error = await editor.request_error(
        "retrace/restore/hunk", ask(hunk=relisted["hunks"][0]["id"], expectedHash=relisted["currentHash"])
    )
    assert "unsaved" in str(error)
    assert app.read_text("utf-8") == before

    for bad in (
        ask(hunk="99,1,99,1"),
        ask(path="../outside.txt"),
        ask(path="/etc/passwd"),
        ask(path="logo.bin"),
        ask(checkpoint="no-such-checkpoint"),
        ask(expectedHash="x"),
    ):
        await editor.request_error("retrace/restore/hunk", bad)
    assert app.read_text("utf-8") == before
    assert (workspace / "logo.bin").read_bytes() == bytes(range(256))
    await editor.request_error("retrace/restore/hunks", {"checkpoint": cp, "path": "../x"})


async def test_crlf_hunk_is_exact(editor: EditorClient, workspace: Path) -> None:
    await editor.run_turn("first task")
    timeline = await editor.request("retrace/timeline/get", {})
    head = timeline["head"]
    notes = workspace / "notes.txt"
    notes.write_bytes(b"todo: ONE\r\ntodo: two\r\ntodo: three")
    listed = await hunks_of(editor, head, "notes.txt")
    assert [h["id"] for h in listed["hunks"]] == ["0,1,0,1", "2,0,2,1"]
    await editor.request(
        "retrace/restore/hunk",
        {"checkpoint": head, "path": "notes.txt", "hunk": "0,1,0,1", "expectedHash": listed["currentHash"]},
    )
    assert notes.read_bytes() == b"todo: one\r\ntodo: two\r\ntodo: three"
