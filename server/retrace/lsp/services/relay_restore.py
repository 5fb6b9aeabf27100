"""Relay method ``restore``: a code restore asked by a process outside the editor (``retrace
mcp``) while this server holds the store.

It runs exactly as the editor's own ``retrace/checkpoint/restore`` does
(:class:`~retrace.lsp.services.restore.RestoreService`): refused in an untrusted workspace,
while an agent turn of this server runs, and while another agent's turn runs unless told
``whileAgentRuns: "proceed"``, through the engine gate, applied by the editor when it can (its unsaved
buffers are conflicts), the same conflict rules, the timeline told. Only ``code`` can be asked,
and there is no ``force``: a conflicting file changes only by its own resolution. A dry run
unless ``dryRun`` is false.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from retrace.camel import CamelModel, dump
from retrace.engine.models import ConflictResolution
from retrace.lsp.services.restore import RestoreService
from retrace.lsp.trust import require_trusted
from retrace.protocol.models import RestoreParams

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer

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


async def restore(server: RetraceServer, services: Services, params: RelayRestoreParams) -> dict[str, Any]:
    require_trusted(server, "Restoring a checkpoint")
    request = RestoreParams(
        id=params.id,
        mode="code",
        dry_run=params.dry_run,
        resolutions=params.resolutions,
        paths=params.paths,
        background_tasks=params.background_tasks,
        while_agent_runs=params.while_agent_runs,
    )
    return dump(await RestoreService(server, services).restore(request))
