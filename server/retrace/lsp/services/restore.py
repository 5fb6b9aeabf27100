"""The server's restore front end: ``retrace/checkpoint/restore`` and what is built on it (a
prompt's restore point, *Undo restore*, the relay's restore of the editor's server).

The restore itself is THE sequence every front end runs (``app/restore_sequence.py``: refusals,
code, conversation, record, reason). What is the server's own: which code applier (the editor's,
``restore_editor.py``, when the client can apply workspace edits and the code is in scope; else
the engine's disk transaction), the guard (none of its agent's turns runs, in any folder that
writes here), the automatic cleanup held off meanwhile, the last restore remembered per engine
for *Undo restore*, and after an applied restore: the target's editor state sent back
(``retrace/editor/restoreState``, unsaved buffer texts re-applied) and ``timeline/didChange``;
then the wire answer (``RestoreResult``, with ``askReason`` by this server's reason rule). A
restore inside a subagent's timeline is code-only, on disk, in its copy (:meth:`_in_task`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pydantic import ValidationError
from pygls.uris import from_fs_path

from retrace.app.restore import (
    BackgroundChoice,
    RestoreRequest,
    WhileAgentRuns,
    disk_request,
    restore_code_on_disk,
    touches_code,
)
from retrace.app.restore_conversation import ConversationTarget
from retrace.app.restore_sequence import (
    CodeApplier,
    DiskApplier,
    SequenceRequest,
    ToCheckpoint,
    UndoRestore,
    run_restore,
)
from retrace.app.restore_undo import undid_words
from retrace.engine.capture.fs import read_regular
from retrace.engine.errors import RetraceError
from retrace.engine.models import Checkpoint, RestoreMode
from retrace.engine.store.events import RestoreRecordEvent
from retrace.lsp.services.agent_turns import refuse_while_running
from retrace.lsp.services.restore_editor import EditorApplier
from retrace.lsp.services.restore_flight import holding
from retrace.lsp.services.restore_undo import reason_allowed, remembered, restore_lock, undo_params
from retrace.lsp.services.timeline import workspace_file
from retrace.lsp.text_edits import text_edits
from retrace.protocol.git_restore import GitChoice
from retrace.protocol.models import (
    EditorState,
    RestoreOutcomePayload,
    RestoreParams,
    RestoreResult,
    TimelineDidChange,
)
from retrace.protocol.tasks import TaskRef

if TYPE_CHECKING:
    from retrace.app.restore_sequence import RestoreDone
    from retrace.bootstrap import Services
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)


def sequence_request(params: RestoreParams) -> SequenceRequest:
    """The sequence's request for a wire restore (the reason comes later: ``retrace/restore/reason``)."""
    return SequenceRequest(
        disk_request(params, params.id),
        background=params.background_tasks,
        while_agent_runs=params.while_agent_runs,
        git_choice=params.git_choice,
    )


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
        recorded, not to the target's). One restore at a time (:func:`restore_lock`); the
        automatic cleanup is held off meanwhile."""
        async with restore_lock(self.server):
            with holding(self.services):
                return await self._restore(params, conversation, undoing=undoing)

    async def _restore(
        self,
        params: RestoreParams,
        conversation: ConversationTarget | None = None,
        *,
        undoing: RestoreRecordEvent | None = None,
    ) -> RestoreResult:
        """:meth:`restore`, its caller holding the restore lock and the cleanup."""
        if params.task is not None:
            return await self._in_task(params, params.task)
        strategy = UndoRestore(undoing) if undoing is not None else ToCheckpoint(conversation)
        done = await run_restore(
            self.services.agent,
            self._applier(params.mode),
            sequence_request(params),
            strategy,
            guard=self._refuse_while_running,
        )
        await self.services.run(lambda e: remembered(e, done.record))
        outcome = done.outcome
        if not params.dry_run and outcome.kind == "applied":
            await self._restore_editor_state(done.target)
            self.server.send_notification(
                "retrace/timeline/didChange",
                TimelineDidChange(
                    head=await self.services.run(lambda e: e.head.id), checkpoint=outcome.checkpoint
                ),
            )
        return self._result(done, undoing)

    def _result(self, done: RestoreDone, undoing: RestoreRecordEvent | None) -> RestoreResult:
        part = done.conversation
        restored = part.restored if part is not None else None
        return RestoreResult(
            outcome=RestoreOutcomePayload(done.outcome),
            conversation_head=restored.view.head if restored is not None else None,
            terminal_notes=restored.terminal_notes if restored is not None else [],
            background_tasks=done.background,
            agent_turns=done.agent_turns,
            ask_reason=reason_allowed(self.server, done.outcome, undo=undoing is not None),
            undid=undid_words(undoing) if undoing is not None else None,
            restored_prompt=part.left_out if part is not None else None,
            git=done.git,
            side_effects=done.side_effects,
        )

    def _applier(self, mode: RestoreMode) -> CodeApplier:
        """The editor applies the code when the client can (dry runs too: unsaved buffers are
        conflicts in the preview as well); else, or with no code in scope, the disk does."""
        if touches_code(mode) and self.server.client_can_apply_edits():
            return EditorApplier(self.server, self.services)
        return DiskApplier(self.services.gate)

    async def _in_task(self, params: RestoreParams, task: TaskRef) -> RestoreResult:
        """A restore inside a subagent's own timeline: its workspace copy (nobody's editor has it
        open), on disk through its engine, with the same plan, conflicts and resolutions."""
        if params.mode != "code":
            raise RetraceError("inside a subagent's timeline only code can be restored")
        request: RestoreRequest = disk_request(params, params.id)
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
        git-aware like any code restore (``gitMoved`` unless ``git_choice``). A restore still
        being applied is waited for (the lock): it is the last one, and the one undone."""
        async with restore_lock(self.server):
            last, params = await undo_params(self.services, background_tasks, while_agent_runs, git_choice)
            with holding(self.services):
                return await self._restore(params, undoing=last)

    async def _refuse_while_running(self) -> None:
        """A restore under a running turn would race its tools (the first folder's agent works
        in every folder): the user cancels first."""
        await refuse_while_running(self.server, self.services)

    # ------------------------------------------------------------------ editor state
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
