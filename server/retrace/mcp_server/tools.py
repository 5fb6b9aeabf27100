"""The ``retrace mcp`` tools: one table entry each (name, description, input and output models,
function), and what each answers — a short text for the calling model and the same facts
structured (:mod:`retrace.mcp_server.models`).

Each function blocks (it opens the store) and raises
:class:`~retrace.engine.errors.RetraceError` for a request it refuses. Diffs are the engine's
(:mod:`retrace.engine.changes`), restores the application restore service's
(:mod:`retrace.app.restore`, or the editor server's through the relay): nothing is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from retrace.camel import CamelModel
from retrace.engine.bookmark_name import bookmark_of, bookmarks
from retrace.engine.engine import Engine
from retrace.engine.models import Checkpoint, FileChange, RestoreApplied, RestoreFailed, RestoreOutcome
from retrace.engine.store.events import AgentSessionEvent, EventSchemaError, parse_event
from retrace.engine.store.journal import parse_line
from retrace.engine.store.layout import StoreLayout
from retrace.mcp_server import words
from retrace.mcp_server.access import McpToolError, StoreAccess
from retrace.mcp_server.models import (
    MAX_FILES,
    CheckpointRow,
    CreateParams,
    CreateResult,
    ListParams,
    ListResult,
    PlannedChange,
    RestoreArgs,
    RestoreResult,
    ShowParams,
    ShowResult,
)
from retrace.mcp_server.query import Filters, UnknownCursorError, agent_of, page
from retrace.text import truncate_utf8_lines

WORKSPACE = "workspace"
"""``against`` value: compare with the files as they are now."""


def resolve(engine: Engine, ref: str) -> Checkpoint:
    """A checkpoint from an id, a unique prefix, or ``head``."""
    return engine.head if ref.lower() == "head" else engine.get(ref)


FIRST_LINE_BYTES = 64 * 1024
"""An ``agentSession`` line is small (bounded fields): more than this is not one."""


def session_agents(engine: Engine, sessions: set[str]) -> dict[str, str]:
    """Session id → the agent whose hooks recorded it: its journal's first line, when that is a
    sealed ``agentSession`` event (only that line is read, whatever the journal's size)."""
    layout = StoreLayout(engine.store_dir)
    out: dict[str, str] = {}
    for sid in sorted(sessions):
        try:
            with layout.journal(sid).open("rb") as f:
                raw = f.readline(FIRST_LINE_BYTES)
        except OSError:
            continue
        if not raw.endswith(b"\n"):
            continue  # empty, torn, or too long to be the line sought
        line = parse_line(1, raw[:-1], last=False).event
        try:
            event = parse_event(line) if line is not None else None
        except EventSchemaError:
            continue
        if isinstance(event, AgentSessionEvent):
            out[sid] = event.agent
    return out


def row(cp: Checkpoint, agents: dict[str, str], names: Mapping[str, str] | None = None) -> CheckpointRow:
    """``cp`` as a tool answer lists it (``names``: the names people gave checkpoints)."""
    return CheckpointRow(
        id=cp.id,
        session=cp.session_id,
        kind=cp.kind,
        tool=cp.tool,
        label=cp.label,
        time=cp.created_at,
        files_changed=len(cp.files),
        agent=agent_of(cp, agents),
        parent=cp.parent,
        bookmark=bookmark_of(cp, names or {}),
    )


# --------------------------------------------------------------------------- list


def list_checkpoints(access: StoreAccess, params: ListParams) -> tuple[str, ListResult]:
    path = params.path
    if path is not None and path.startswith("/"):
        path = access.rel(path)
    wanted = Filters(params.session, params.kind, params.tool, path, params.agent, params.text)

    def query(engine: Engine) -> ListResult:
        checkpoints = engine.timeline()
        names = engine.history.names
        filters = wanted
        if params.bookmarks:
            filters = replace(wanted, named=frozenset(bookmarks(checkpoints, names)))
        agents = session_agents(engine, {cp.session_id for cp in checkpoints})
        try:
            rows, cursor = page(checkpoints, filters, agents, limit=params.limit, before=params.before)
        except UnknownCursorError as exc:
            raise McpToolError(str(exc)) from None
        return ListResult(checkpoints=[row(cp, agents, names) for cp in rows], next_before=cursor)

    result = access.read(query)
    return words.listing(result), result


# --------------------------------------------------------------------------- show


def show_checkpoint(access: StoreAccess, params: ShowParams) -> tuple[str, ShowResult]:
    path = None if params.path is None else access.rel(params.path)

    def query(engine: Engine) -> ShowResult:
        cp = resolve(engine, params.id)
        against = _against(engine, cp, params.against)
        agents = session_agents(engine, {cp.session_id})
        if against is None:  # a first checkpoint: nothing to compare with; its files are named
            recorded = sorted(engine.manifest(cp.id))
            files = [FileChange(path=p, status="added") for p in recorded if path is None or p == path]
            return _shown(row(cp, agents, engine.history.names), None, files, "", params.max_bytes)
        old, new = (cp.id, None) if against == WORKSPACE else (against, cp.id)
        files = engine.diff(old, new)
        if path is not None:
            files = [f for f in files if path in (f.path, f.old_path)]
        patch = engine.unified_diff(old, new, None if path is None else [path])
        return _shown(row(cp, agents, engine.history.names), against, files, patch, params.max_bytes)

    result = access.read(query)
    return words.shown(result), result


def _against(engine: Engine, cp: Checkpoint, against: str | None) -> str | None:
    if against is None or against.lower() == "parent":
        return cp.parent
    if against.lower() == WORKSPACE:
        return WORKSPACE
    return resolve(engine, against).id


def _shown(
    cp: CheckpointRow, against: str | None, files: list[FileChange], patch: str, max_bytes: int
) -> ShowResult:
    cut, truncated = truncate_utf8_lines(patch, max_bytes)
    binary = [f.path for f in files if f.binary]
    return ShowResult(
        checkpoint=cp,
        against=against,
        files=files[:MAX_FILES],
        files_omitted=max(0, len(files) - MAX_FILES),
        binary_files=binary[:MAX_FILES],
        patch=cut,
        truncated=truncated,
    )


# --------------------------------------------------------------------------- create


def create_checkpoint(access: StoreAccess, params: CreateParams) -> tuple[str, CreateResult]:
    cp, via = access.checkpoint(params.label)
    result = CreateResult(checkpoint=row(cp, {}), via=via)
    return words.created(result), result


# --------------------------------------------------------------------------- restore


def restore_checkpoint(access: StoreAccess, params: RestoreArgs) -> tuple[str, RestoreResult]:
    # An id or prefix is looked up by whoever restores (the server or this process's writer);
    # only "head" needs the store opened first to be named.
    target = params.id if params.id.lower() != "head" else access.read(lambda e: e.head.id)
    outcome, via = access.restore(target, params)
    result = restore_result(outcome, via)
    return words.restored(result, resolutions=bool(params.resolutions)), result


def undo_of(outcome: RestoreOutcome) -> str | None:
    """What restoring undoes ``outcome``: the safety checkpoint of the work it replaced, else
    the head it replaced (the restore checkpoint's parent)."""
    if not isinstance(outcome, RestoreApplied) or outcome.dry_run:
        return None
    if outcome.safety_checkpoint_id is not None:
        return outcome.safety_checkpoint_id
    return outcome.checkpoint.parent if outcome.checkpoint is not None else None


def restore_result(outcome: RestoreOutcome, via: str) -> RestoreResult:
    # A dry run's "restored" means "would be": only what it would NOT do is worth saying.
    hidden = ("restored", "merged") if outcome.dry_run else ()
    status = {f.path: f.status for f in outcome.files if f.status not in hidden}
    planned = outcome.plan.files if outcome.plan is not None else []
    files = [
        PlannedChange(
            path=pf.path,
            action=pf.intended if pf.action == "conflict" else pf.action,
            from_path=pf.from_path,
            conflict=pf.conflict.detail if pf.conflict is not None else None,
            status=status.get(pf.path),
        )
        for pf in planned
    ]
    applied = isinstance(outcome, RestoreApplied) and not outcome.dry_run
    checkpoint = outcome.checkpoint.id if isinstance(outcome, RestoreApplied) and outcome.checkpoint else None
    return RestoreResult(
        outcome=outcome.kind,
        applied=applied,
        dry_run=outcome.dry_run,
        target=outcome.target_id,
        files=files,
        conflicts=[f.path for f in outcome.files if f.status == "conflict"],
        skipped=list(outcome.skipped),
        checkpoint=checkpoint,
        undo=undo_of(outcome),
        via="server" if via == "server" else "store",
        message=getattr(outcome, "error", "") or getattr(outcome, "reason", ""),
        rolled_back=outcome.rolled_back if isinstance(outcome, RestoreFailed) else None,
    )


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: type[CamelModel]
    result: type[CamelModel]
    run: Callable[[StoreAccess, Any], tuple[str, CamelModel]]
    read_only: bool


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("list_checkpoints", words.LIST, ListParams, ListResult, list_checkpoints, True),
        Tool("show_checkpoint", words.SHOW, ShowParams, ShowResult, show_checkpoint, True),
        Tool("create_checkpoint", words.CREATE, CreateParams, CreateResult, create_checkpoint, False),
        Tool("restore_checkpoint", words.RESTORE, RestoreArgs, RestoreResult, restore_checkpoint, False),
    )
}
