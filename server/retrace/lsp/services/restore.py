"""Restore orchestration: the engine plans, the EDITOR applies (undoable), the engine commits.

``code``/``both`` with a client that can apply workspace edits:

1. dry-run through the engine (plan + conflict classification); a conflict, "nothing to restore"
   or a failure is returned as is; open documents with unsaved changes in scope are conflicts too
   (never clobber a dirty buffer) unless ``force``/``resolutions`` say otherwise;
2. ``engine.take_safety_checkpoint()`` (unrecorded work becomes restorable);
3. one ``workspace/applyEdit``: minimal versioned ``TextDocumentEdit``s for text files present on
   both sides, ``CreateFile`` + insert, ``DeleteFile``, ``RenameFile``; ``applied: false`` →
   ``failed`` with the client's reason (nothing was written: the disk part runs after it);
4. what a WorkspaceEdit cannot express (binary files, symlinks, exec-bit changes) is written to
   disk transactionally by the engine's applier, and logged;
5. ``retrace/editor/save`` for the touched documents, so the disk matches the checkpoint;
6. ``engine.commit_applied_restore(plan)`` verifies disk == target and commits the restore
   checkpoint; 7. for ``both``, the agent moves the conversation head; 8. the target's editor
   state goes back to the client (``retrace/editor/restoreState``); 9. ``timeline/didChange``.

Dry runs, ``conversation`` and clients without ``workspace.applyEdit`` (headless) go through
``engine.restore`` directly (atomic disk writes).

All or nothing across a crash: before the first file changes, a ``restoreIntent`` journal event
records the pre-restore head (a safety checkpoint has just recorded every unrecorded change) and
the paths in scope; ``restoreDone`` follows the outcome. A server killed in between (mid
``workspace/applyEdit``, between the disk writes) leaves an intent without ``restoreDone``, and
the next start rolls those paths back to the pre-restore head (``services/recovery.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types as lsp
from pydantic import ValidationError
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from retrace.engine import Engine
from retrace.engine.apply import Op, apply_ops, prune_empty_parents
from retrace.engine.errors import RetraceError
from retrace.engine.models import (
    Checkpoint,
    ConflictResolution,
    FileEntry,
    FileOutcome,
    PlannedFile,
    RestoreConflict,
    RestoreFailed,
    RestorePlan,
)
from retrace.engine.recovery import begin_restore, end_restore
from retrace.lsp.services.timeline import workspace_file
from retrace.lsp.text_edits import text_edits
from retrace.protocol.models import (
    EditorSaveParams,
    EditorSaveResult,
    EditorState,
    RestoreOutcomePayload,
    RestoreParams,
    RestoreResult,
    TimelineDidChange,
)
from retrace.text import decode_text

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from retrace.bootstrap import Services
    from retrace.engine.models import RestoreOutcome
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


@dataclass
class EditPlan:
    """What one restore sends to the editor and what it writes itself."""

    changes: list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile] = field(
        default_factory=list
    )
    save_uris: list[str] = field(default_factory=list)
    disk_ops: list[Op] = field(default_factory=list)
    disk_reasons: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    """Workspace-relative paths the editor deletes (or renames away)."""

    def disk(self, op: Op, why: str) -> None:
        self.disk_ops.append(op)
        self.disk_reasons.append(f"{op.path} ({why})")


def _text(data: bytes | None) -> str | None:
    return None if data is None else decode_text(data)


def prune_emptied_dirs(workspace: Path, deleted: list[str]) -> None:
    """Remove directories that the editor's deletes left empty (like the engine's disk apply);
    a directory that still holds anything, or the workspace itself, stays."""
    root = str(workspace.resolve())
    for rel in deleted:
        prune_empty_parents(root, str(workspace_file(workspace, rel)))


def effective_resolution(
    planned: PlannedFile, force: bool, resolutions: dict[str, ConflictResolution]
) -> ConflictResolution | None:
    if planned.action != "conflict":
        return None
    return "overwrite" if force else resolutions.get(planned.path)


class RestoreService:
    def __init__(self, server: RetraceServer, services: Services) -> None:
        self.server = server
        self.services = services

    # ------------------------------------------------------------------ entry point
    async def restore(self, params: RestoreParams) -> RestoreResult:
        target = await self.services.run(lambda e: e.get(params.id))
        if not params.dry_run:
            await self._refuse_while_running()
        resolutions = dict(params.resolutions or {})
        # Dry runs take the editor path too: unsaved buffers are conflicts in the preview as well.
        through_editor = params.mode != "conversation" and self.server.client_can_apply_edits()
        if through_editor:
            outcome = await self._through_editor(target, params, resolutions)
        else:
            # On disk: the engine journals the restore's intent itself, so a crash mid-apply is
            # rolled back when the store is next opened.
            outcome = await self.services.run(
                lambda e: e.restore(
                    target.id,
                    mode=params.mode,
                    dry_run=params.dry_run,
                    force=params.force,
                    resolutions=resolutions,
                    paths=params.paths,
                )
            )
        code_done = outcome.kind == "applied" or (
            outcome.kind == "nothingToRestore" and params.mode != "code"
        )
        head: str | None = None
        if not params.dry_run and code_done and params.mode in ("conversation", "both"):
            view = await self.services.agent.restore_conversation(target.session_id, target.id)
            head = view.head
        if not params.dry_run and outcome.kind == "applied":
            await self._restore_editor_state(target)
            self.server.send_notification(
                "retrace/timeline/didChange",
                TimelineDidChange(
                    head=await self.services.run(lambda e: e.head.id), checkpoint=outcome.checkpoint
                ),
            )
        return RestoreResult(outcome=RestoreOutcomePayload(outcome), conversation_head=head)

    async def _preview(
        self, target: Checkpoint, params: RestoreParams, resolutions: dict[str, ConflictResolution]
    ) -> RestoreOutcome:
        """The engine's dry run of this restore: the plan both apply paths start from."""
        return await self.services.run(
            lambda e: e.restore(
                target.id,
                mode=params.mode,
                dry_run=True,
                force=params.force,
                resolutions=resolutions,
                paths=params.paths,
            )
        )

    async def _refuse_while_running(self) -> None:
        """A restore under a running turn would race its tools: the user cancels first."""
        for session_id in await self.services.run(lambda e: e.sessions()):
            if self.services.agent.running(session_id):
                raise RetraceError(
                    f"the agent is running in session {session_id}; cancel it before restoring"
                )

    # ------------------------------------------------------------------ editor path
    async def _through_editor(
        self, target: Checkpoint, params: RestoreParams, resolutions: dict[str, ConflictResolution]
    ) -> RestoreOutcome:
        check = await self._preview(target, params, resolutions)
        if check.kind != "applied" or check.plan is None:
            return check
        plan = check.plan
        dirty = self._dirty_conflicts(plan, params.force, resolutions)
        if dirty:
            return RestoreConflict(
                target_id=target.id, mode=params.mode, dry_run=params.dry_run, files=dirty, plan=plan
            )
        if params.dry_run:
            return check

        effective = {
            pf.path: res
            for pf in plan.files
            if (res := effective_resolution(pf, params.force, resolutions)) is not None
        }
        safety = await self.services.run(lambda e: e.take_safety_checkpoint())
        edit = await self.services.run(lambda e: self._edit_plan(e, plan, effective))
        restore_id = await self.services.run(lambda e: begin_restore(e, plan))
        outcome = await self._apply_through_editor(target, params, plan, edit, effective)
        if outcome.kind == "applied" and safety is not None and outcome.safety_checkpoint_id is None:
            outcome.safety_checkpoint_id = safety.id
        await self.services.run(lambda e: end_restore(e, restore_id, outcome.kind))
        return outcome

    async def _apply_through_editor(
        self,
        target: Checkpoint,
        params: RestoreParams,
        plan: RestorePlan,
        edit: EditPlan,
        effective: dict[str, ConflictResolution],
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
                lambda e: apply_ops(e.workspace, edit.disk_ops, e.config.max_file_bytes)
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
            lambda e: e.commit_applied_restore(plan, resolutions=effective, editor_state=target.editor_state)
        )

    def _open_document(self, uri: str) -> TextDocument | None:
        """The document the client has open at ``uri`` (pygls keys them unquoted), else ``None``."""
        document: TextDocument | None = self.server.workspace.text_documents.get(unquote(uri))
        return document

    def _dirty_conflicts(
        self, plan: RestorePlan, force: bool, resolutions: dict[str, ConflictResolution]
    ) -> list[FileOutcome]:
        """Files in scope whose open editor buffer differs from the disk (unsaved work)."""
        found = []
        for pf in plan.files:
            if force or pf.path in resolutions:
                continue
            path = workspace_file(self.services.workspace, pf.path)
            document = self._open_document(str(from_fs_path(str(path))))
            if document is None:
                continue
            try:
                disk = path.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                disk = None
            if disk is None and pf.path not in self.server.dirty_paths():
                # A clean buffer of a file that is gone from disk (e.g. loaded by a diff view)
                # holds no unsaved work; only the editor's dirty flag makes it a conflict.
                continue
            if disk != document.source:
                found.append(
                    FileOutcome(
                        path=pf.path,
                        action="conflict",
                        status="conflict",
                        detail="unsaved changes in the editor",
                    )
                )
        return found

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

        for pf in plan.files:
            resolution = effective.get(pf.path)
            no_merge = pf.conflict is None or pf.conflict.merged_text is None
            if resolution == "skip" or (resolution == "merge" and no_merge):
                continue  # never overwrite a conflict without a clean merge to write instead
            action = pf.intended if pf.action == "conflict" else pf.action
            target: FileEntry | None = pf.target
            if resolution == "merge" and pf.conflict is not None and pf.conflict.merged_text is not None:
                data: bytes | None = pf.conflict.merged_text.encode("utf-8")
            elif target is not None and target.kind == "file" and target.hash is not None:
                data = engine.read_blob(target.hash)
            else:
                data = None
            current = pf.current

            if action == "delete":
                if current is not None and current.kind == "file" and "delete" in resource_ops:
                    edit.changes.append(
                        lsp.DeleteFile(
                            uri=uri(pf.path), options=lsp.DeleteFileOptions(ignore_if_not_exists=True)
                        )
                    )
                    edit.deleted.append(pf.path)
                else:
                    why = (
                        "symlink"
                        if current is not None and current.kind != "file"
                        else "client cannot delete"
                    )
                    edit.disk(Op(pf.path, "delete", None), why)
            elif action == "rename" and pf.from_path is not None and "rename" in resource_ops:
                edit.changes.append(lsp.RenameFile(old_uri=uri(pf.from_path), new_uri=uri(pf.path)))
                edit.deleted.append(pf.from_path)
            elif action == "chmod" and target is not None:
                edit.disk(Op(pf.path, "chmod", target), "executable bit")
            elif target is None:
                continue
            elif target.kind != "file" or data is None:
                edit.disk(
                    Op(pf.path, "write", target, data), "symlink" if target.kind != "file" else "content"
                )
            else:
                self._text_or_disk(
                    edit, pf, target, data, file_uri=uri(pf.path), codec=codec, resource_ops=resource_ops
                )
        return edit

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
        new_text = _text(data)
        current = pf.current
        exists = current is not None and current.kind == "file"
        if new_text is None:
            edit.disk(Op(pf.path, "write", target, data), "binary")
            return
        if not exists:
            if "create" not in resource_ops or target.executable:
                edit.disk(
                    Op(pf.path, "write", target, data),
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
            old_text = _text(path.read_bytes()) if path.exists() else None
            version = None
        if old_text is None:
            edit.disk(Op(pf.path, "write", target, data), "current content is binary")
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
            edit.disk(Op(pf.path, "chmod", target), "executable bit")

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

    async def _restore_editor_state(self, target: Checkpoint) -> None:
        if not target.editor_state:
            return
        try:
            state = EditorState.model_validate(target.editor_state)
        except ValidationError as exc:
            log.info("checkpoint %s has no usable editor state: %s", target.id, exc.error_count())
            return
        try:
            await self.server.send_request("retrace/editor/restoreState", state)
        except Exception as exc:
            log.warning("restoring the editor state of %s failed: %s", target.id, exc)
