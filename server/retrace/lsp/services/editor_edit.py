"""The pieces of a restore the editor applies: the edit plan (what goes to the editor as a
``WorkspaceEdit``, what the engine writes on disk because an edit cannot express it, each checked
against what the plan saw), and unsaved editor buffers as ``unsaved`` conflicts of a plan (with a
clean 3-way merge when there is one). :mod:`retrace.lsp.services.restore` orchestrates them.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp

from retrace.engine import Engine
from retrace.engine.capture.fs import read_regular
from retrace.engine.merge import merge3
from retrace.engine.models import ConflictInfo, FileEntry, PlanCounts, PlannedFile, RestorePlan
from retrace.engine.restore.ops import DiskOp, OpKind, Seen
from retrace.engine.workspace import DirTree, EscapeError, prune_empty_parents
from retrace.lsp.services.timeline import workspace_file
from retrace.text import decode_text


@dataclass
class EditPlan:
    """What one restore sends to the editor and what it writes itself."""

    changes: list[lsp.TextDocumentEdit | lsp.CreateFile | lsp.RenameFile | lsp.DeleteFile] = field(
        default_factory=list
    )
    save_uris: list[str] = field(default_factory=list)
    disk_ops: list[DiskOp] = field(default_factory=list)
    disk_reasons: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    """Workspace-relative paths the editor deletes (or renames away)."""

    def disk(self, op: DiskOp, why: str) -> None:
        self.disk_ops.append(op)
        self.disk_reasons.append(f"{op.path} ({why})")


def disk_op(pf: PlannedFile, kind: OpKind, entry: FileEntry | None, data: bytes | None = None) -> DiskOp:
    """A disk operation the editor cannot express; checked against what the plan saw on disk."""
    source = (lambda: data) if data is not None else None
    forced = pf.action == "conflict"
    return DiskOp(pf.path, kind, entry, Seen(pf.current), source=source, replace_directory=forced)


def delete_change(edit: EditPlan, pf: PlannedFile, file_uri: str, client_deletes: bool) -> None:
    """A delete through the editor when it can express it (a file), else on disk."""
    current = pf.current
    if current is not None and current.kind == "file" and client_deletes:
        edit.changes.append(
            lsp.DeleteFile(uri=file_uri, options=lsp.DeleteFileOptions(ignore_if_not_exists=True))
        )
        edit.deleted.append(pf.path)
        return
    why = "symlink" if current is not None and current.kind != "file" else "client cannot delete"
    edit.disk(disk_op(pf, "delete", None), why)


def editor_may_touch(tree: DirTree, rel: str) -> bool:
    """Whether the editor may change ``rel`` itself: every parent is a real directory of the
    workspace (or not there yet) and the entry is a regular file or absent. The editor follows
    links when it writes; the disk writer never does, so everything else goes to it."""
    try:
        st = tree.lstat(rel)
    except (OSError, EscapeError):
        return False
    return st is None or stat.S_ISREG(st.st_mode)


def on_disk_instead(edit: EditPlan, pf: PlannedFile, action: str | None, data: bytes | None) -> None:
    """``pf`` through the disk writer: a link (or a link in its parents) is in the way."""
    why = "a symbolic link in the way"
    target = pf.target
    if action == "delete" or target is None:
        edit.disk(disk_op(pf, "delete", None), why)
        return
    edit.disk(disk_op(pf, "chmod" if action == "chmod" else "write", target, data), why)
    if action == "rename" and pf.from_path:
        # The source holds the target's content (that is how the planner paired them).
        edit.disk(DiskOp(pf.from_path, "delete", None, Seen(target)), why)


def editor_text(data: bytes | None) -> str | None:
    return None if data is None else decode_text(data)


def prune_emptied_dirs(workspace: Path, deleted: list[str]) -> None:
    """Remove directories that the editor's deletes left empty (like the engine's disk apply);
    a directory that still holds anything, or the workspace itself, stays."""
    root = str(workspace.resolve())
    for rel in deleted:
        prune_empty_parents(root, str(workspace_file(workspace, rel)))


UNSAVED_DETAIL = "unsaved changes in the editor"


def _merged_with_buffer(engine: Engine, pf: PlannedFile, buffer: str) -> str | None:
    """A clean 3-way merge of the unsaved buffer into the restore (base: the file on disk)."""
    theirs: bytes | None
    if pf.conflict is not None and pf.conflict.merged_text is not None:
        theirs = pf.conflict.merged_text.encode()
    elif pf.target is not None and pf.target.kind == "file" and pf.target.hash is not None:
        theirs = engine.read_blob(pf.target.hash)
    else:
        return None
    try:
        disk = read_regular(str(workspace_file(engine.workspace, pf.path)))
    except OSError:
        return None
    return merge3(disk, buffer.encode(), theirs)


def with_unsaved_conflicts(engine: Engine, plan: RestorePlan, unsaved: dict[str, str]) -> RestorePlan:
    """``plan`` with every file that has unsaved editor changes turned into an ``unsaved``
    conflict (so previews, dialogs and outcomes all count it), carrying a merge when one is clean."""
    if not unsaved or not any(pf.path in unsaved for pf in plan.files):
        return plan
    files: list[PlannedFile] = []
    for pf in plan.files:
        buffer = unsaved.get(pf.path)
        if buffer is None:
            files.append(pf)
            continue
        conflict = ConflictInfo(
            reason="unsaved", detail=UNSAVED_DETAIL, merged_text=_merged_with_buffer(engine, pf, buffer)
        )
        intended = pf.intended if pf.action == "conflict" else pf.action
        files.append(pf.model_copy(update={"action": "conflict", "conflict": conflict, "intended": intended}))
    counts = PlanCounts()
    for f in files:
        setattr(counts, f.action, getattr(counts, f.action) + 1)
    return plan.model_copy(update={"files": files, "counts": counts})
