"""The editor applier: the code half of a restore applied by the EDITOR (undoable there), for a
client that can apply workspace edits (``app/restore_sequence.py``'s :class:`CodeApplier`; the
sequence around it is the same for every front end).

1. plan through the engine; open documents with unsaved changes in scope are conflicts too
   (never clobber a dirty buffer) unless ``force``/``resolutions`` say otherwise; the engine's
   one outcome ladder (``engine/restore/ladder.py``) answers a conflict, "nothing to restore", a
   preview (dry runs take this path too: unsaved buffers are conflicts in the preview as well)
   or the steps to apply;
2. ``engine.take_safety_checkpoint()`` (unrecorded work becomes restorable; unsaved buffer texts
   kept in its editor state);
3. one ``workspace/applyEdit``: minimal versioned ``TextDocumentEdit``s for text files present on
   both sides, ``CreateFile`` + insert, ``DeleteFile``, ``RenameFile``; ``applied: false`` →
   ``failed`` with the client's reason (nothing was written: the disk part runs after it);
4. what a WorkspaceEdit cannot express (binary files, symlinks, exec-bit changes, paths behind a
   link) is written to disk transactionally by the engine's disk writer, and logged;
5. ``retrace/editor/save`` for the touched documents, so the disk matches the checkpoint;
6. ``engine.commit_applied_restore(plan)`` verifies disk == target and commits the restore
   checkpoint.

All or nothing across a crash: before the first file changes, a ``restoreIntent`` journal event
records the pre-restore head (a safety checkpoint has just recorded every unrecorded change) and
the paths in scope (``engine.begin_restore``); the transaction is closed by the commit, or
abandoned with the outcome when the editor path failed before it. A server killed in between
(mid ``workspace/applyEdit``, between the disk writes) leaves an intent without ``restoreDone``,
and the next start rolls those paths back to the pre-restore head.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace.position_codec import PositionCodec

from retrace.app.restore import RestoreRequest
from retrace.engine import Engine
from retrace.engine.capture.fs import read_regular
from retrace.engine.models import (
    Checkpoint,
    ConflictResolution,
    FileEntry,
    PlannedFile,
    RestoreApplied,
    RestoreFailed,
    RestorePlan,
)
from retrace.engine.restore.disk import apply_disk
from retrace.engine.restore.ladder import Choices, ToApply, climb
from retrace.engine.restore.ops import Seen
from retrace.engine.restore.transaction import RestoreTransaction
from retrace.engine.workspace import DirTree
from retrace.lsp.services.editor_edit import (
    EditPlan,
    delete_change,
    disk_op,
    editor_may_touch,
    editor_text,
    on_disk_instead,
    prune_emptied_dirs,
    with_unsaved_conflicts,
)
from retrace.lsp.services.timeline import workspace_file
from retrace.lsp.text_edits import text_edits
from retrace.protocol.models import EditorSaveParams, EditorSaveResult

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from retrace.bootstrap import Services
    from retrace.engine.models import RestoreOutcome
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)


class EditorApplier:
    """The code half through the editor (:class:`~retrace.app.restore_sequence.CodeApplier`)."""

    def __init__(self, server: ServerPort, services: Services) -> None:
        self.server = server
        self.services = services

    async def apply(self, target: Checkpoint, params: RestoreRequest) -> RestoreOutcome:
        unsaved = self._unsaved_buffers()
        plan = await self.services.run(
            lambda e: with_unsaved_conflicts(
                e, e.plan_restore(target.id, mode=params.mode, paths=params.paths), unsaved
            )
        )
        # The one outcome ladder (engine): only its last rung reaches the editor applier.
        choices = Choices(
            dry_run=params.dry_run,
            force=params.force,
            resolutions=params.resolutions,
            skip_conflicts=params.skip_conflicts,
            scoped=params.paths is not None,
        )
        rung = climb(plan, choices, {}, lambda _entry: None)
        if not isinstance(rung, ToApply):
            return rung
        decision = rung.decision
        effective = {pf.path: res for pf in plan.files if (res := decision.action(pf)) is not None}
        state = self._safety_editor_state(unsaved)
        safety = await self.services.run(lambda e: e.take_safety_checkpoint(editor_state=state))
        edit = await self.services.run(lambda e: self._edit_plan(e, plan, effective))
        txn = await self.services.run(lambda e: e.begin_restore(plan))
        outcome = await self._apply_through_editor(target, params, plan, edit, effective, txn=txn)
        if isinstance(outcome, RestoreApplied):
            outcome.skipped = decision.skipped
            if safety is not None and outcome.safety_checkpoint_id is None:
                outcome.safety_checkpoint_id = safety.id
        # Closes the transaction when the editor path failed before committing (else a no-op).
        await self.services.run(lambda e: txn.abandon(outcome.kind))
        return outcome

    def _unsaved_buffers(self) -> dict[str, str]:
        """Workspace-relative path → text of every open document whose buffer differs from disk."""
        out: dict[str, str] = {}
        workspace = self.services.workspace
        dirty = self.server.dirty_paths()
        for uri, document in list(self.server.workspace.text_documents.items()):
            if not uri.startswith("file:"):
                continue
            # The document's own folder decides (FolderRouter): another folder's file is not ours.
            rel = self.server.scoped_rel(to_fs_path(uri) or "", workspace)
            if rel is None:
                continue
            path = workspace_file(workspace, rel)
            try:
                disk: str | None = read_regular(str(path)).decode("utf-8")  # a FIFO never blocks
            except (OSError, UnicodeDecodeError):
                disk = None
            if disk is None and rel not in dirty:
                # A clean buffer of a file that is gone from disk (e.g. loaded by a diff view)
                # holds no unsaved work; only the editor's dirty flag makes it a conflict.
                continue
            if disk != document.source:
                out[rel] = document.source
        return out

    def _safety_editor_state(self, unsaved: dict[str, str]) -> dict[str, Any] | None:
        """The editor state the safety checkpoint keeps: the layout plus unsaved buffer texts."""
        if not unsaved:
            return None
        state = dict(self.server.editor_state or {"openEditors": [], "activeEditor": None})
        state["buffers"] = [{"path": p, "text": t} for p, t in sorted(unsaved.items())]
        return state

    async def _apply_through_editor(
        self,
        target: Checkpoint,
        params: RestoreRequest,
        plan: RestorePlan,
        edit: EditPlan,
        effective: dict[str, ConflictResolution],
        *,
        txn: RestoreTransaction,
    ) -> RestoreOutcome:
        if edit.changes:
            reason = await self._apply_workspace_edit(edit, target)
            if reason is not None:
                return RestoreFailed(
                    target_id=target.id,
                    mode=params.mode,
                    plan=plan,
                    error=f"the editor refused the restore edit: {reason}",
                    rolled_back=True,
                )
        if edit.disk_ops:
            log.info(
                "restore %s: written directly to disk (not expressible as a workspace edit): %s",
                target.id,
                "; ".join(edit.disk_reasons),
            )
            result = await self.services.run(
                lambda e: apply_disk(
                    e.workspace, e.store_dir / "trash" / f"editor-{target.id}", edit.disk_ops
                )
            )
            if not result.ok:
                return RestoreFailed(
                    target_id=target.id,
                    mode=params.mode,
                    plan=plan,
                    error=f"writing {result.failed_path} failed: {result.error}",
                    rolled_back=False,
                )
        if edit.deleted:
            await self.services.run(lambda e: prune_emptied_dirs(e.workspace, edit.deleted))
        if edit.save_uris:
            await self._save(edit.save_uris)
        return await self.services.run(
            lambda e: e.commit_applied_restore(
                plan, resolutions=effective, editor_state=target.editor_state, transaction=txn
            )
        )

    def _open_document(self, uri: str) -> TextDocument | None:
        """The document the client has open at ``uri`` (pygls keys them unquoted), else ``None``."""
        document: TextDocument | None = self.server.workspace.text_documents.get(unquote(uri))
        return document

    def _edit_plan(
        self, engine: Engine, plan: RestorePlan, effective: dict[str, ConflictResolution]
    ) -> EditPlan:
        """Split the plan into editor changes and direct disk operations (runs in the gate)."""
        edit = EditPlan()
        resource_ops = self.server.client_resource_operations()
        codec = self.server.workspace.position_codec
        workspace = self.services.workspace

        def uri(rel: str) -> str:
            return str(from_fs_path(str(workspace_file(workspace, rel))))

        with DirTree(workspace) as tree:
            for pf in plan.files:
                self._plan_one(
                    edit,
                    engine,
                    tree,
                    pf,
                    effective.get(pf.path),
                    uri=uri,
                    codec=codec,
                    resource_ops=resource_ops,
                )
        return edit

    def _plan_one(
        self,
        edit: EditPlan,
        engine: Engine,
        tree: DirTree,
        pf: PlannedFile,
        resolution: ConflictResolution | None,
        *,
        uri: Callable[[str], str],
        codec: PositionCodec,
        resource_ops: set[str],
    ) -> None:
        """One planned file into editor changes or disk operations."""
        no_merge = pf.conflict is None or pf.conflict.merged_text is None
        if resolution == "skip" or (resolution == "merge" and no_merge):
            return  # never overwrite a conflict without a clean merge to write instead
        action = pf.intended if pf.action == "conflict" else pf.action
        target: FileEntry | None = pf.target
        if resolution == "merge" and pf.conflict is not None and pf.conflict.merged_text is not None:
            data: bytes | None = pf.conflict.merged_text.encode("utf-8")
        elif target is not None and target.kind == "file" and target.hash is not None:
            data = engine.read_blob(target.hash)
        else:
            data = None
        touched = [pf.path] + ([pf.from_path] if action == "rename" and pf.from_path else [])
        if not all(editor_may_touch(tree, rel) for rel in touched):
            on_disk_instead(edit, pf, action, data)
            return
        if action == "delete":
            delete_change(edit, pf, uri(pf.path), "delete" in resource_ops)
        elif action == "rename" and pf.from_path is not None and "rename" in resource_ops:
            edit.changes.append(lsp.RenameFile(old_uri=uri(pf.from_path), new_uri=uri(pf.path)))
            edit.deleted.append(pf.from_path)
        elif action == "chmod" and target is not None:
            edit.disk(disk_op(pf, "chmod", target), "executable bit")
        elif target is None:
            return
        elif target.kind != "file" or data is None:
            edit.disk(disk_op(pf, "write", target, data), "symlink" if target.kind != "file" else "content")
        else:
            self._text_or_disk(
                edit, pf, target, data, file_uri=uri(pf.path), codec=codec, resource_ops=resource_ops
            )

    def _text_or_disk(
        self,
        edit: EditPlan,
        pf: PlannedFile,
        target: FileEntry,
        data: bytes,
        *,
        file_uri: str,
        codec: PositionCodec,
        resource_ops: set[str],
    ) -> None:
        new_text = editor_text(data)
        current = pf.current
        exists = current is not None and current.kind == "file"
        if new_text is None:
            edit.disk(disk_op(pf, "write", target, data), "binary")
            return
        if not exists:
            if "create" not in resource_ops or target.executable:
                edit.disk(
                    disk_op(pf, "write", target, data),
                    "new executable file" if target.executable else "create",
                )
                return
            edit.changes.append(lsp.CreateFile(uri=file_uri, options=lsp.CreateFileOptions(overwrite=True)))
            edit.changes.append(
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=file_uri, version=None),
                    edits=[
                        lsp.TextEdit(
                            range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new_text=new_text
                        )
                    ],
                )
            )
            edit.save_uris.append(file_uri)
            return
        path = workspace_file(self.services.workspace, pf.path)
        document = self._open_document(file_uri)
        if document is not None:
            old_text: str | None = document.source
            version = document.version
        else:
            old_text = editor_text(read_regular(str(path))) if path.exists() else None
            version = None
        if old_text is None:
            edit.disk(disk_op(pf, "write", target, data), "current content is binary")
            return
        edits = text_edits(old_text, new_text, codec)
        if edits:
            edit.changes.append(
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=file_uri, version=version),
                    edits=list(edits),
                )
            )
            edit.save_uris.append(file_uri)
        if current is not None and current.executable != target.executable:
            # The editor may already have written the new text (or will, on save): only the mode
            # changes here, so whatever content is there is what gets its mode set.
            chmod = disk_op(pf, "chmod", target)
            chmod.seen = Seen(None, anything=True)
            edit.disk(chmod, "executable bit")

    async def _apply_workspace_edit(self, edit: EditPlan, target: Checkpoint) -> str | None:
        """Send the edit; ``None`` when applied, else the client's reason."""
        params = lsp.ApplyWorkspaceEditParams(
            label=f"Retrace: restore {target.id}",
            edit=lsp.WorkspaceEdit(document_changes=edit.changes),
        )
        try:
            result = await self.server.workspace_apply_edit_async(params)
        except Exception as exc:
            return f"workspace/applyEdit failed: {exc}"
        if not result.applied:
            return result.failure_reason or "no reason given"
        return None

    async def _save(self, uris: list[str]) -> None:
        try:
            raw = await self.server.send_request("retrace/editor/save", EditorSaveParams(uris=uris))
            answer = EditorSaveResult.model_validate(raw)
        except Exception as exc:
            log.warning("asking the client to save %d document(s) failed: %s", len(uris), exc)
            return
        if answer.failed:
            log.warning("the client could not save: %s", ", ".join(answer.failed))
