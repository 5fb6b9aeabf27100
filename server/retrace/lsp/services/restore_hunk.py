"""Per-hunk review and restore (``retrace/restore/hunks``, ``retrace/restore/hunk``).

The hunks are the server's (:mod:`retrace.app.hunks`): between a checkpoint's version of one text
file and the text the editor holds now (its open buffer, else the disk). Restoring one hunk:

1. refused while an agent turn runs (its tools would race the edit), for a binary file, a file
   with unsaved editor changes (never clobber a dirty buffer: save first) and a file that is not
   the text the hunk was computed from (``expectedHash`` ≠ the current text's hash:
   ``hunkConflict``) — nothing is written;
2. ``engine.take_safety_checkpoint()`` records unrecorded work (the state *Undo last restore*
   goes back to; the head when nothing was unrecorded);
3. one versioned ``workspace/applyEdit`` (the editor refuses it when the document moved on since)
   with the minimal text edits, then ``retrace/editor/save``;
4. the disk is read back: what it holds is committed as a ``restore`` checkpoint of that one path
   (``meta.hunk``: base checkpoint, path, hunk, lines); a disk that is not the expected text
   (someone wrote meanwhile) is reported, the undo target still set;
5. the undo target of this server session is the state of step 2, and ``timeline/didChange``.

Like any code restore it settles running background commands first (``backgroundTasks``:
refused with ``backgroundTasksRunning`` without a choice, :func:`retrace.app.restore.settle_background`)
and is counted in the restore metrics: one ``restore`` statistics event of mode ``hunk``
(``applied``; ``conflict`` when the file moved on or the editor refused the edit; ``failed`` when
the editor could not apply or save it).

In a multi-root workspace both methods are served per folder (a request naming ``folder`` runs
on that folder's services, :mod:`retrace.lsp.folders`): the path, the disk, the buffer and the
store are that folder's, and step 1 also waits for the first folder's running turn (its agent
writes in every folder, :mod:`retrace.lsp.services.agent_turns`).

A crash between 3 and 4 leaves one file edited and unrecorded: the next capture records it as an
``external`` change and the safety checkpoint still holds the state before.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from retrace.app import hunks as hk
from retrace.app.restore import settle_background
from retrace.engine.capture.fs import read_regular
from retrace.engine.errors import RetraceError
from retrace.engine.store.events import RestoreStatsEvent
from retrace.engine.workspace import normalize_rel
from retrace.lsp.services.agent_turns import refuse_while_running
from retrace.lsp.services.restore_flight import holding
from retrace.lsp.services.restore_undo import record_code
from retrace.lsp.services.timeline import workspace_file
from retrace.lsp.text_edits import text_edits
from retrace.protocol.hunks import (
    MAX_HUNKS,
    HunksParams,
    HunksResult,
    HunkView,
    RestoreHunkParams,
    RestoreHunkResult,
)
from retrace.protocol.models import EditorSaveParams, EditorSaveResult, TimelineDidChange
from retrace.text import decode_text

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from retrace.bootstrap import Services
    from retrace.engine import Engine
    from retrace.lsp.services.port import ServerPort


def _base_text(engine: Engine, checkpoint: str, rel: str) -> tuple[str, str]:
    """(full checkpoint id, the checkpoint's text of ``rel``; ``""`` when it had no such file)."""
    cp = engine.get(checkpoint)
    data = engine.file_content(cp.id, rel)
    text = "" if data is None else decode_text(data)
    if text is None:
        raise RetraceError(f"{rel} is binary at {cp.id[:12]}: restore the whole file instead")
    return cp.id, text


def _view(h: hk.Hunk) -> HunkView:
    return HunkView(
        id=h.id,
        base_start=h.base_start,
        base_count=h.base_count,
        current_start=h.current_start,
        current_count=h.current_count,
        base_text="".join(h.base_lines),
        current_text="".join(h.current_lines),
    )


class HunkRestoreService:
    def __init__(self, server: ServerPort, services: Services) -> None:
        self.server = server
        self.services = services

    # ------------------------------------------------------------------ entry points
    async def hunks(self, params: HunksParams) -> HunksResult:
        rel = self._rel(params.path)
        cp_id, base = await self.services.run(lambda e: _base_text(e, params.checkpoint, rel))
        current = self._current(rel)
        found = await asyncio.to_thread(hk.hunks, base, current)  # a big file: off the event loop
        return HunksResult(
            path=rel,
            checkpoint=cp_id,
            current_hash=hk.text_hash(current),
            hunks=[_view(h) for h in found[:MAX_HUNKS]],
            truncated=len(found) > MAX_HUNKS,
        )

    async def restore(self, params: RestoreHunkParams) -> RestoreHunkResult:
        with holding(self.services):  # the automatic cleanup waits for it
            return await self._restore_held(params)

    async def _restore_held(self, params: RestoreHunkParams) -> RestoreHunkResult:
        rel = self._rel(params.path)
        await self._refuse_while_running()
        cp_id, base = await self.services.run(lambda e: _base_text(e, params.checkpoint, rel))
        background = await settle_background(
            self.services.agent.background, "code", dry_run=False, choice=params.background_tasks
        )
        t0 = time.perf_counter()
        try:
            result = await self._restore(params, rel, cp_id, base)
        except hk.HunkConflict:
            await self._count(t0, "conflict", cp_id, None)
            raise
        except RetraceError:
            await self._count(t0, "failed", cp_id, None)
            raise
        await self._count(t0, "applied", cp_id, result.checkpoint.id)
        return result.model_copy(update={"background_tasks": background})

    async def _count(self, t0: float, kind: str, target: str, checkpoint: str | None) -> None:
        """The ``restore`` statistics event the metrics count (mode ``hunk``)."""
        event = RestoreStatsEvent(
            duration_ms=round((time.perf_counter() - t0) * 1000, 3),
            kind=kind,
            target_id=target,
            mode="hunk",
            checkpoint_id=checkpoint,
        )
        await self.services.run(lambda e: e.append_event(event, durable=False))  # informational

    async def _restore(self, params: RestoreHunkParams, rel: str, cp_id: str, base: str) -> RestoreHunkResult:
        current = self._current(rel)
        hk.check_current(current, params.expected_hash, rel)
        if self._disk(rel) != current:
            raise hk.HunkConflict(f"{rel} has unsaved changes in the editor: save it, then restore the hunk")
        hunk = await asyncio.to_thread(hk.find, base, current, params.hunk)
        new_text = hk.revert(current, hunk)
        safety = await self.services.run(lambda e: e.take_safety_checkpoint())
        before = safety.id if safety is not None else await self.services.run(lambda e: e.head.id)
        await self._apply(rel, current, new_text)
        label = f"Restored a hunk of {rel} from {cp_id[:8]}"
        meta = {"hunk": {"from": cp_id, "path": rel, "hunk": hunk.id, "line": hunk.current_start + 1}}
        cp = await self.services.run(
            lambda e: e.checkpoint(label, changed_paths=[rel], kind="restore", meta=meta)
        )
        await record_code(self.services, cp_id, f"a hunk of {rel}", cp.id, before)
        self.server.send_notification(
            "retrace/timeline/didChange", TimelineDidChange(head=cp.id, checkpoint=cp)
        )
        now = self._disk(rel)
        if now != new_text:
            raise hk.HunkConflict(
                f"{rel} changed while the hunk was restored: it holds neither text now "
                "(Undo last restore goes back to the state before)"
            )
        return RestoreHunkResult(checkpoint=cp, safety_checkpoint_id=before, current_hash=hk.text_hash(now))

    # ------------------------------------------------------------------ pieces
    def _rel(self, path: str) -> str:
        rel = normalize_rel(path, self.services.workspace)
        workspace_file(self.services.workspace, rel)  # refuses a way out through a link
        return rel

    def _uri(self, rel: str) -> str:
        return str(from_fs_path(str(workspace_file(self.services.workspace, rel))))

    def _document(self, rel: str) -> TextDocument | None:
        document: TextDocument | None = self.server.workspace.text_documents.get(unquote(self._uri(rel)))
        return document

    def _disk(self, rel: str) -> str | None:
        """The file's text on disk; ``None`` when missing; binary refused."""
        path: Path = workspace_file(self.services.workspace, rel)
        try:
            data = read_regular(str(path))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RetraceError(f"{rel} cannot be read: {exc.strerror or exc}") from None
        text = decode_text(data)
        if text is None:
            raise RetraceError(f"{rel} is binary: restore the whole file instead")
        return text

    def _current(self, rel: str) -> str:
        """The text the user sees: the open buffer, else the disk (a missing file is refused)."""
        document = self._document(rel)
        if document is not None:
            return document.source
        text = self._disk(rel)
        if text is None:
            raise RetraceError(f"{rel} is not in the workspace now: restore the whole file instead")
        return text

    async def _refuse_while_running(self) -> None:
        """A restore under a running turn would race its tools (the first folder's agent works
        in every folder): the user cancels first."""
        await refuse_while_running(self.server, self.services)

    async def _apply(self, rel: str, current: str, new_text: str) -> None:
        if not self.server.client_can_apply_edits():
            raise RetraceError("restoring a hunk needs an editor that applies workspace edits")
        uri = self._uri(rel)
        document = self._document(rel)
        edits = text_edits(current, new_text, self.server.workspace.position_codec) or []
        params = lsp.ApplyWorkspaceEditParams(
            label=f"Retrace: restore a hunk of {rel}",
            edit=lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=None if document is None else document.version
                        ),
                        edits=list(edits),
                    )
                ]
            ),
        )
        try:
            result = await self.server.workspace_apply_edit_async(params)
        except Exception as exc:
            raise RetraceError(f"the editor could not apply the hunk: {exc}") from None
        if not result.applied:
            raise hk.HunkConflict(
                f"the editor refused the hunk of {rel}: {result.failure_reason or 'the file changed'}"
            )
        raw = await self.server.send_request("retrace/editor/save", EditorSaveParams(uris=[uri]))
        answer = EditorSaveResult.model_validate(raw)
        if answer.failed:
            raise RetraceError(f"the editor could not save {rel}: {', '.join(answer.failed)}")
