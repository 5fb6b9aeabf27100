"""``retrace run``: one agent turn headless, built by the composition root.

The model endpoint is the environment's (``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``); with
neither, the offline demo model answers only in a demo folder (:mod:`retrace.bootstrap`), and
elsewhere the run is refused before the agent starts. Background commands the turn started are
stopped when the run ends (their starts and ends are printed). ``--mirror-git`` commits the turn's
end onto ``refs/heads/retrace/<session id>`` (:func:`retrace.app.handoff.export.mirror_session`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TextIO

from retrace.agent.headless import PrintingHost
from retrace.agent.permissions import PermissionSettings
from retrace.agent.settings import AgentSettings
from retrace.app.handoff.export import mirror_session
from retrace.bootstrap import open_services
from retrace.engine.errors import RetraceError

EXIT_CODES = {"end_turn": 0, "cancelled": 130}


async def run_task(
    workspace: Path,
    store: Path | None,
    prompt: str,
    *,
    session_id: str | None,
    permission: str,
    out: TextIO,
    mirror_git: bool = False,
) -> int:
    """Run one turn headless; exit code 0 when it ended normally, 130 when cancelled, else 1."""
    if permission not in ("auto", "deny", "ask"):
        raise RetraceError(f"unknown permission policy {permission!r} (auto | deny | ask)")
    settings = AgentSettings(permissions=PermissionSettings(write=permission, command=permission))
    host = PrintingHost(out, permission)
    services = await open_services(workspace, store, host, settings)
    try:
        services.require_model(settings.base_url)
        service = services.agent
        sid, _ = await service.prompt(prompt, session_id)
        out.write(f"session {sid}\n")
        try:
            await service.wait_idle(sid)
        except (KeyboardInterrupt, asyncio.CancelledError):
            await service.cancel(sid)
        if mirror_git:
            commit = await services.run(lambda engine: mirror_session(engine, sid))
            if commit is not None:
                out.write(f"git mirror refs/heads/retrace/{sid} {commit}\n")
    finally:
        # Its background commands end with the run (printed); nothing outlives the command.
        await services.agent.background.stop_all(by="shutdown")
        await asyncio.to_thread(services.close)
    return EXIT_CODES.get(host.stop_reason or "error", 1)
