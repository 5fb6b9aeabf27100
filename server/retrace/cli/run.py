"""``retrace run``: one agent turn headless, built by the composition root.

The model endpoint is the environment's (``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``); with
neither, the offline demo model answers only in a demo folder (:mod:`retrace.bootstrap`), and
elsewhere the run is refused before the agent starts. Background commands the turn started are
stopped when the run ends (their starts and ends are printed), and so are the MCP servers of an
``--mcp`` file (the ``servers`` map of ``.vscode/mcp.json``; only an explicitly named file is
read — a workspace's own config would run commands its author chose). Their tools are asked for
under the same ``--permission`` policy as writes and commands. ``--mirror-git`` commits the turn's
end onto ``refs/heads/retrace/<session id>`` (:func:`retrace.app.handoff.export.mirror_session`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from retrace.agent.headless import PrintingHost
from retrace.agent.mcp.config import McpSettings
from retrace.agent.model.settings import ModelSettings
from retrace.agent.permissions import PermissionSettings
from retrace.agent.settings import AgentSettings
from retrace.app.handoff.export import mirror_session
from retrace.bootstrap import open_services
from retrace.engine.errors import RetraceError

EXIT_CODES = {"end_turn": 0, "cancelled": 130}


def load_mcp_config(path: Path) -> McpSettings:
    """The MCP servers of a JSON file with a ``servers`` map; a clear error naming the file when it
    cannot be read or is not that shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return McpSettings.model_validate(data)
    except OSError as exc:
        raise RetraceError(f"cannot read the MCP config {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise RetraceError(f"the MCP config {path} is not JSON: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise RetraceError(f"the MCP config {path} is not a `servers` map: {problems}") from exc


OPTION_OF = {
    "retrace.model.openaiCompatible.baseUrl": "--endpoint",
    "retrace.model.vertex.projectId": "--project",
    "retrace.model.vertex.region": "--region",
    "retrace.model.bedrock.region": "--region",
    "retrace.model.bedrock.profile": "--profile",
    "retrace.model.id": "--model",
}
"""The setting a model problem names → the ``retrace run`` option that sets it."""


def _as_options(problem: str) -> str:
    """A model problem in the command line's words (the option, not the setting)."""
    for setting, option in OPTION_OF.items():
        problem = problem.replace(setting, option)
    return problem


async def run_task(
    workspace: Path,
    store: Path | None,
    prompt: str,
    *,
    session_id: str | None,
    permission: str,
    out: TextIO,
    mcp: Path | None = None,
    mirror_git: bool = False,
    model: ModelSettings | None = None,
) -> int:
    """Run one turn headless; exit code 0 when it ended normally, 130 when cancelled, else 1.
    ``model``: the provider and its settings (default: the Anthropic API, from the environment)."""
    if permission not in ("auto", "deny", "ask"):
        raise RetraceError(f"unknown permission policy {permission!r} (auto | deny | ask)")
    servers = load_mcp_config(mcp) if mcp is not None else McpSettings()
    model = model or ModelSettings()
    problem = model.problem()
    if problem is not None:
        raise RetraceError(_as_options(problem))
    settings = AgentSettings(
        permissions=PermissionSettings(write=permission, command=permission, mcp=permission),
        mcp=servers,
        model=model.model_id(),
        access=model,
        context_window=model.context_window,
    )
    host = PrintingHost(out, permission)
    services = await open_services(workspace, store, host, settings)
    try:
        services.require_model(settings.base_url, model)
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
        await services.agent.mcp.close()
        await asyncio.to_thread(services.close)
    return EXIT_CODES.get(host.stop_reason or "error", 1)
