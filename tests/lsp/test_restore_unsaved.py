"""Unsaved editor work during a restore, through the real server: an ``unsaved`` conflict in the
plan (what the dialog counts), ``skipConflicts`` restores everything else, and undoing a forced
restore brings the typing back into the editor through ``retrace/restore/undoLast``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from tests.lsp.lsp_support import EditorClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def restore(editor: EditorClient, cp_id: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await editor.request(
        "retrace/checkpoint/restore", {"id": cp_id, "mode": "code", **extra}
    )
    return result


def edited_texts(edit: lsp.ApplyWorkspaceEditParams, editor: EditorClient) -> list[str]:
    return [
        e.new_text
        for change in edit.edit.document_changes or []
        if isinstance(change, lsp.TextDocumentEdit)
        for e in change.edits
        if isinstance(e, lsp.TextEdit)
    ]


def echo_applied_edit(editor: EditorClient, uri: str) -> None:
    """What VS Code does after applying an edit to an open document: ``didChange`` to the server
    (the stand-in client applies edits without telling the server)."""
    document = editor.documents[uri]
    editor.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=document.version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=document.text)],
        )
    )


async def test_unsaved_buffer_conflict_skip_and_undo_brings_typing_back(
    editor: EditorClient, workspace: Path
) -> None:
    error = await editor.request_error("retrace/restore/undoLast", {})
    assert "no restore to undo" in str(error)
    result = await editor.run_turn("first task")
    created = [e["checkpoint"] for e in editor.events_of("checkpointCreated", result["turnId"])]
    target = created[0]["id"]
    app = workspace / "src" / "app.py"
    on_disk = app.read_text("utf-8")
    uri = editor.open_document("src/app.py")
    typed = on_disk + "# typed, never saved\n"
    editor.type_in_document(uri, typed)

    # The plan itself carries the conflict, so a dialog counting the plan's conflicts sees it.
    preview = await restore(editor, target, dryRun=True)
    outcome = preview["outcome"]
    assert outcome["kind"] == "conflict", outcome
    [planned] = [f for f in outcome["plan"]["files"] if f["action"] == "conflict"]
    assert planned["path"] == "src/app.py"
    assert planned["conflict"]["reason"] == "unsaved"
    assert planned["conflict"]["detail"] == "unsaved changes in the editor"
    assert outcome["plan"]["counts"]["conflict"] == 1

    # Skipping conflicts restores every other file, and says exactly what was skipped.
    skipped = await restore(editor, target, skipConflicts=True, resolutions={})
    outcome = skipped["outcome"]
    assert outcome["kind"] == "applied", outcome
    assert outcome["skipped"] == ["src/app.py"]
    [kept] = [f for f in outcome["files"] if f["path"] == "src/app.py"]
    assert kept["status"] == "skipped" and "unsaved changes in the editor" in kept["detail"]
    assert not (workspace / "counter.txt").exists(), "the non-conflicting files were not restored"
    assert app.read_text("utf-8") == on_disk and editor.documents[uri].text == typed

    # Overwriting keeps the typing in the safety checkpoint, and undo puts it back, unsaved.
    forced = await restore(editor, target, force=True)
    outcome = forced["outcome"]
    assert outcome["kind"] == "applied", outcome
    assert "return 1" in editor.documents[uri].text
    echo_applied_edit(editor, uri)
    safety = await editor.request("retrace/checkpoint/get", {"id": outcome["safetyCheckpointId"]})
    buffers = safety["checkpoint"]["editorState"]["buffers"]
    assert buffers == [{"path": "src/app.py", "text": typed}]

    edits_before = len(editor.applied_edits)
    undone = await editor.request("retrace/restore/undoLast", {})
    assert undone["outcome"]["kind"] in ("applied", "nothingToRestore"), undone
    assert editor.documents[uri].text == typed, "undo did not bring the unsaved typing back"
    new_texts = [text for edit in editor.applied_edits[edits_before:] for text in edited_texts(edit, editor)]
    assert any("# typed, never saved" in text for text in new_texts), new_texts
