"""Handler: ``retrace/agents/integrate`` (Retrace's hooks in another agent's project settings).
The work is :func:`retrace.app.hooks.settings_file.integrate` (the CLI's ``retrace integrate``),
run on a worker thread: it touches two small files and never the engine."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from retrace.app.hooks.settings_file import integrate
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.agents import AgentIntegrateParams, AgentIntegrateResult

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer


async def agents_integrate(ls: RetraceServer, params: AgentIntegrateParams) -> AgentIntegrateResult:
    require_trusted(ls, "Checkpointing another agent")
    services = await ls.services()
    return await asyncio.to_thread(integrate, services.workspace, params.agent, remove_=params.remove)


HANDLERS: dict[str, Handler] = {"retrace/agents/integrate": agents_integrate}
