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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pydantic import ValidationError
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace.position_codec import PositionCodec

from retrace.app.restore import (
    BackgroundChoice,
    WhileAgentRuns,
    disk_request,
    moves_conversation,
    refuse_conversation,
    restore_code_on_disk,
    settle_agents,
    settle_background,
    touches_code,
)
from retrace.app.restore_conversation import ConversationTarget, move_conversation
from retrace.app.restore_git import check_git, park_if_asked, side_effects_after
from retrace.app.restore_side import tell_code_restore, with_stopped
from retrace.app.restore_undo import git_reference, undid_words
from retrace.engine import Engine
from retrace.engine.capture.fs import read_regular
from retrace.engine.errors import RetraceError
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
from retrace.engine.store.events import RestoreRecordEvent
from retrace.engine.workspace import DirTree
from retrace.lsp.services.agent_turns import refuse_while_running
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
from retrace.lsp.services.restore_flight import holding
from retrace.lsp.services.restore_undo import (
    reason_allowed,
    record,
    undo_conversation,
    undo_lock,
    undo_params,
)
from retrace.lsp.services.timeline import workspace_file
from retrace.lsp.text_edits import text_edits
from retrace.protocol.git_restore import GitChoice
from retrace.protocol.models import (
    EditorSaveParams,
    EditorSaveResult,
    EditorState,
    RestoreOutcomePayload,
    RestoreParams,
    RestoreResult,
    TimelineDidChange,
)
from retrace.protocol.tasks import TaskRef

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from retrace.agent.session import SessionRestored
    from retrace.bootstrap import Services
    from retrace.engine.models import RestoreOutcome
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)


class RestoreService:
    def __init__(self, server: ServerPort, services: Services) -> None:
        self.server = server
        self.services = services

    # ------------------------------------------------------------------ entry points
    async def restore(
        self,
        params: RestoreParams,
        conversation: ConversationTarget | None = None,
        *,
        undoing: RestoreRecordEvent | None = None,
    ) -> RestoreResult:
        """``conversation``: whose conversation moves and where (default: the checkpoint's own
        session, to its cursor; another agent's checkpoint then restores code only). With
        ``undoing``, the undo of that recorded restore (its conversation goes back to the head it
        recorded, not to the target's). The automatic cleanup is held off meanwhile."""
        with holding(self.services):
            return await self._restore(params, conversation, undoing=undoing)

    async def _restore(
        self,
        params: RestoreParams,
        conversation: ConversationTarget | None = None,
        *,
        undoing: RestoreRecordEvent | None = None,
    ) -> RestoreResult:
        if params.task is not None:
            return await self._in_task(params, params.task)
        target = await self.services.run(lambda e: e.get(params.id))
        if conversation is None:
            await self.services.run(lambda e: refuse_conversation(e, target.id, params.mode))
        if not params.dry_run:
            await self._refuse_while_running()
        agents = await self.services.run(
            lambda e: settle_agents(e, params.mode, dry_run=params.dry_run, choice=params.while_agent_runs)
        )
        git = await self.services.run(
            lambda e: check_git(
                e,
                git_reference(e, target.id, undoing),
                params.mode,
                dry_run=params.dry_run,
                choice=params.git_choice,
            )
        )
        background = await settle_background(
            self.services.agent.background,
            params.mode,
            dry_run=params.dry_run,
            choice=params.background_tasks,
        )
        git = await self.services.run(
            lambda e: park_if_asked(e, git, params.mode, dry_run=params.dry_run, choice=params.git_choice)
        )
        effects = await self.services.run(lambda e: side_effects_after(e, target.id))
        # Dry runs take the editor path too: unsaved buffers are conflicts in the preview as well.
        through_editor = touches_code(params.mode) and self.server.client_can_apply_edits()
        if through_editor:
            outcome = await self._through_editor(target, params)
        else:
            # On disk: the engine journals the restore's intent itself, so a crash mid-apply is
            # rolled back when the store is next opened.
            request = disk_request(params, target.id)
            outcome = await self.services.run(lambda e: restore_code_on_disk(e, request))
        head: str | None = None
        notes: list[str] = []
        left_out: str | None = None
        restored: SessionRestored | None = None
        if undoing is not None:
            restored = await undo_conversation(self.services, target, params, outcome, undoing)
        elif moves_conversation(params.mode, outcome):
            whose = conversation or ConversationTarget(target.session_id)
            moved = await move_conversation(self.services.agent, whose, target.id)
            restored, left_out = moved.restored, moved.restored_prompt
        if restored is not None:
            head, notes = restored.view.head, restored.terminal_notes
            background = with_stopped(background, restored.stopped)  # started after the target
        elif params.mode == "code" and not params.dry_run:
            await tell_code_restore(self.services.agent, target, outcome)
        await record(self.services, target, params.mode, outcome, restored=restored, undoing=undoing)
        if not params.dry_run and outcome.kind == "applied":
            await self._restore_editor_state(target)
            self.server.send_notification(
                "retrace/timeline/didChange",
                TimelineDidChange(
                    head=await self.services.run(lambda e: e.head.id), checkpoint=outcome.checkpoint
                ),
            )
        return RestoreResult(
            outcome=RestoreOutcomePayload(outcome),
            conversation_head=head,
            terminal_notes=notes,
            background_tasks=background,
            agent_turns=agents,
            ask_reason=reason_allowed(self.server, outcome, undo=undoing is not None),
            undid=undid_words(undoing) if undoing is not None else None,
            restored_prompt=left_out,
            git=git,
            side_effects=effects,
        )

    async def _in_task(self, params: RestoreParams, task: TaskRef) -> RestoreResult:
        """A restore inside a subagent's own timeline: its workspace copy (nobody's editor has it
        open), on disk through its engine, with the same plan, conflicts and resolutions."""
        if params.mode != "code":
            raise RetraceError("inside a subagent's timeline only code can be restored")
        request = disk_request(params, params.id)
        outcome = await self.services.agent.tasks.write(
            task.session_id, task.task_id, lambda e: restore_code_on_disk(e, request)
        )
        return RestoreResult(outcome=RestoreOutcomePayload(outcome), conversation_head=None)

    async def undo_last(
        self,
        background_tasks: BackgroundChoice | None = None,
        while_agent_runs: WhileAgentRuns | None = None,
        git_choice: GitChoice | None = None,
    ) -> RestoreResult:
        """Undo exactly the store's last restore, whatever its mode (``app/restore_undo.py``);
        git-aware like any code restore (``gitMoved`` unless ``git_choice``)."""
        async with undo_lock(self.server):
            last, params = await undo_params(self.services, background_tasks, while_agent_runs, git_choice)
            return await self.restore(params, undoing=last)

    async def _refuse_while_running(self) -> None:
        """A restore under a running turn would race its tools (the first folder's agent works
        in every folder): the user cancels first."""
        await refuse_while_running(self.server, self.services)

    # ------------------------------------------------------------------ editor path
    async def _through_editor(self, target: Checkpoint, params: RestoreParams) -> RestoreOutcome:
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
        params: RestoreParams,
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

    async def _reapply_buffers(self, target: Checkpoint) -> None:
        """Put the unsaved editor texts a safety checkpoint kept back into the editor (unsaved)."""
        buffers = (target.editor_state or {}).get("buffers") or []
        codec = self.server.workspace.position_codec
        changes: list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile] = []
        for buffer in buffers:
            path, text = buffer.get("path"), buffer.get("text")
            if not isinstance(path, str) or not isinstance(text, str):
                continue
            file_path = workspace_file(self.services.workspace, path)
            uri = str(from_fs_path(str(file_path)))
            # The restore just saved this file: the editor's text is the disk's (the server's
            # copy of the document may still be waiting for the editor's didChange).
            try:
                old = read_regular(str(file_path)).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            edits = text_edits(old, text, codec)
            if edits:
                changes.append(
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                        edits=list(edits),
                    )
                )
        if not changes:
            return
        params = lsp.ApplyWorkspaceEditParams(
            label=f"Retrace: bring back unsaved editor text of {target.id}",
            edit=lsp.WorkspaceEdit(document_changes=changes),
        )
        try:
            result = await self.server.workspace_apply_edit_async(params)
        except Exception as exc:
            log.warning("bringing back the unsaved editor text of %s failed: %s", target.id, exc)
            return
        if not result.applied:
            log.warning("the editor refused the unsaved text of %s: %s", target.id, result.failure_reason)

    async def _restore_editor_state(self, target: Checkpoint) -> None:
        if not target.editor_state:
            return
        if target.editor_state.get("buffers") and self.server.client_can_apply_edits():
            await self._reapply_buffers(target)
        layout = {k: v for k, v in target.editor_state.items() if k != "buffers"}
        if not layout.get("openEditors") and layout.get("activeEditor") is None:
            return
        try:
            state = EditorState.model_validate(layout)
        except ValidationError as exc:
            log.info("checkpoint %s has no usable editor state: %s", target.id, exc.error_count())
            return
        try:
            await self.server.send_request("retrace/editor/restoreState", state)
        except Exception as exc:
            log.warning("restoring the editor state of %s failed: %s", target.id, exc)
