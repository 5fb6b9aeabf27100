"""Relay method ``restore``: a code restore asked by a process outside the editor (``retrace
mcp``) of whichever process holds the store.

In the editor's server it runs exactly as the editor's own ``retrace/checkpoint/restore`` does
(:func:`editor_restore`, :class:`~retrace.lsp.services.restore.RestoreService`): refused in an
untrusted workspace, while an agent turn of this server runs, and while another agent's turn runs
unless told ``whileAgentRuns: "proceed"``; through the engine gate, applied by the editor when it
can (its unsaved buffers are conflicts), the same conflict rules, the timeline told. In a headless
holder (no editor) it restores on disk as ``retrace restore`` does without a server (the same
``app/restore.py`` rules). Only ``code`` can be asked, and there is no ``force``: a conflicting
file changes only by its own resolution. A dry run unless ``dryRun`` is false.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from retrace.camel import CamelModel, dump
from retrace.engine.models import ConflictResolution, RestoreOutcome
from retrace.protocol.models import RestoreParams

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.engine.engine import Engine
    from retrace.lsp.services.port import ServerPort
    from retrace.lsp.services.relay_context import RelayContext

MAX_PATHS = 10_000


class RelayRestoreParams(CamelModel):
    id: str = Field(min_length=1, max_length=200)
    """Checkpoint id or unique prefix."""
    dry_run: bool = True
    resolutions: dict[str, ConflictResolution] | None = Field(default=None, max_length=MAX_PATHS)
    paths: list[str] | None = Field(default=None, max_length=MAX_PATHS)
    background_tasks: Literal["stop", "keep"] | None = None
    while_agent_runs: Literal["proceed"] | None = None
    """Another agent's running turn: refused unless ``proceed`` (as the editor's own restore)."""
    git_choice: Literal["filesOnly", "parkFirst"] | None = None
    """HEAD or the branch moved since the checkpoint: refused unless given (``app/restore_git.py``)."""


def _request(params: RelayRestoreParams) -> RestoreParams:
    return RestoreParams(
        id=params.id,
        mode="code",
        dry_run=params.dry_run,
        resolutions=params.resolutions,
        paths=params.paths,
        background_tasks=params.background_tasks,
        while_agent_runs=params.while_agent_runs,
        git_choice=params.git_choice,
    )


async def restore(ctx: RelayContext, params: RelayRestoreParams) -> dict[str, Any]:
    request = _request(params)
    if ctx.restore is not None:
        return await ctx.restore(request)
    outcome = await ctx.run(lambda engine: _on_disk(engine, request))
    return {"outcome": dump(outcome), "conversationHead": None}


def _on_disk(engine: Engine, params: RestoreParams) -> RestoreOutcome:
    """A headless holder's restore: the command line's own rules, on disk (no editor here)."""
    from retrace.app.restore import disk_request, restore_code_on_disk, settle_agents
    from retrace.app.restore_git import settle_git

    target = engine.get(params.id)
    settle_agents(engine, "code", dry_run=params.dry_run, choice=params.while_agent_runs)
    settle_git(engine, target.id, "code", dry_run=params.dry_run, choice=params.git_choice)
    return restore_code_on_disk(engine, disk_request(params, target.id))


def editor_restore(
    server: ServerPort, services: Services
) -> Callable[[RestoreParams], Awaitable[dict[str, Any]]]:
    """The editor's server's own restore, as the relay context's ``restore`` ability."""

    async def run(request: RestoreParams) -> dict[str, Any]:
        from retrace.lsp.services.restore import RestoreService
        from retrace.lsp.services.trust import require_trusted

        require_trusted(server, "Restoring a checkpoint")
        return dump(await RestoreService(server, services).restore(request))

    return run
