"""Handlers: ``retrace/export/git`` and ``retrace/attribution`` (one application call each,
through the engine gate; an export writes to the repository, so an untrusted workspace refuses it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.app.attribution import attribution as attribute
from retrace.app.handoff.export import export_branch
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.handoff import AttributionParams, GitExportParams, GitExportResult, TraceRecord

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def export_git(ls: RetraceServer, params: GitExportParams) -> GitExportResult:
    require_trusted(ls, "Export to git")
    services = await ls.services()
    p = params
    out = await services.run(
        lambda engine: export_branch(
            engine, p.checkpoint_id, p.branch, message=p.message, author=p.author, base=p.base
        )
    )
    return GitExportResult(commit=out.commit, branch=out.branch, files=out.files, base=out.base)


async def attribution(ls: RetraceServer, params: AttributionParams) -> TraceRecord:
    services = await ls.services()
    return await services.run(
        lambda engine: attribute(
            engine,
            engine.get(params.from_checkpoint).id if params.from_checkpoint else None,
            engine.get(params.to_checkpoint).id if params.to_checkpoint else engine.head.id,
        )
    )


HANDLERS: dict[str, Handler] = {"retrace/export/git": export_git, "retrace/attribution": attribution}
