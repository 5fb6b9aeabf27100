"""The store behind ``retrace mcp``: read per call, written through the server holding it.

Reads open the store read-only for the call (no writer lock, as ``retrace log`` does): a running
editor server is no obstacle and every call sees the journals as they are now. Writes — a named
checkpoint, a restore — are handed to the server holding the store when one answers on its relay
socket (:mod:`retrace.relay`: it runs them through its engine gate, serialised with its agent's
checkpoints, tells the editor, and a restore follows its own rules: the editor applies it,
unsaved buffers are conflicts, a running turn refuses it); with no server this process opens the
store as the writer for the call and closes it at once (releasing the lock).

Every function here blocks: :mod:`retrace.mcp_server.server` runs them in a worker thread, one
at a time. Failures are :class:`~retrace.engine.errors.RetraceError` with one readable line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from retrace.app.restore import RestoreRequest, restore_code_on_disk, settle_agents
from retrace.app.restore_git import settle_git
from retrace.engine.bookmarks import mark
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError, StoreNotInitialised
from retrace.engine.models import Checkpoint, RestoreOutcome
from retrace.engine.store.blobs import BlobSource
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.engine.workspace import normalize_rel
from retrace.mcp_server.models import RestoreArgs
from retrace.protocol.models import RestoreOutcomePayload
from retrace.redact import redact
from retrace.relay.client import RelayRefusedError, RelayTimeoutError, forward

T = TypeVar("T")

MCP_SESSION = "mcp"
"""Session of every checkpoint made through ``retrace mcp``: one group in the timeline."""

RESTORE_TIMEOUT_S = 300.0
"""How long a relayed restore may take (the editor applies it, behind an agent's capture)."""

Via = Literal["server", "store"]


class McpToolError(RetraceError):
    """A request ``retrace mcp`` refuses, with the reason in one line."""


@dataclass(frozen=True)
class StoreAccess:
    workspace: Path
    store: Path

    @classmethod
    def of(cls, workspace: str | os.PathLike[str], store: str | os.PathLike[str] | None) -> StoreAccess:
        ws = Path(workspace).expanduser()
        if not ws.is_dir():
            raise McpToolError(f"workspace is not a directory: {ws}")
        ws = ws.resolve()
        return cls(ws, Path(store).expanduser().absolute() if store else default_store_dir(ws))

    def rel(self, path: str) -> str:
        """A path from a request as a workspace-relative path (the workspace rule), or an error."""
        return normalize_rel(path, self.workspace)

    # ------------------------------------------------------------------ reads
    def read(self, query: Callable[[Engine], T]) -> T:
        with self._open(readonly=True, blob_source=self._blob_source()) as engine:
            return query(engine)

    def _open(self, **options: Any) -> Engine:
        try:
            return Engine.open(self.workspace, self.store, create=False, **options)
        except StoreNotInitialised:
            raise McpToolError(
                f"no Retrace store at {self.store} for {self.workspace} yet: create_checkpoint makes "
                "one (or open the folder in VS Code with Retrace, or run retrace init)"
            ) from None

    def _blob_source(self) -> BlobSource | None:
        """Sessions opened from a remote read their blobs from it when needed (as the CLI does)."""
        if not os.path.lexists(StoreLayout(self.store).remote_config):
            return None
        from retrace.sync.service import RemoteService

        return RemoteService(self.store, self.workspace).blob_source()

    # ------------------------------------------------------------------ writes
    def checkpoint(self, name: str) -> tuple[Checkpoint, Via]:
        """A named manual checkpoint of every change since the head. The name came from a model,
        not typed by the user: known secret formats in it are redacted before it is stored."""
        label = redact(name)
        params = {"label": label, "kind": "manual", "sessionId": MCP_SESSION}
        result = self._forward("checkpoint", params, 60.0)
        if result is not None:
            return Checkpoint.model_validate(result.get("checkpoint")), "server"
        # No catch-up: what changed since the last checkpoint is what this checkpoint records.
        with Engine.open(
            self.workspace,
            self.store,
            session_id=MCP_SESSION,
            config=EngineConfig(watcher=False),
            create=True,
            catch_up=False,
        ) as engine:
            return mark(engine, label, session_id=MCP_SESSION), "store"

    def restore(self, target: str, args: RestoreArgs) -> tuple[RestoreOutcome, Via]:
        """A code restore to ``target`` (a checkpoint id or prefix): a dry run unless confirmed."""
        paths = None if args.paths is None else [self.rel(p) for p in args.paths]
        resolutions = {self.rel(p): r for p, r in (args.resolutions or {}).items()}
        params: dict[str, Any] = {
            "id": target,
            "dryRun": not args.confirm,
            "resolutions": resolutions or None,
            "paths": paths,
            "backgroundTasks": args.background_tasks,
            "whileAgentRuns": args.while_agent_runs,
            "gitChoice": args.git_choice,
        }
        result = self._forward("restore", params, RESTORE_TIMEOUT_S)
        if result is not None:
            return RestoreOutcomePayload.model_validate(result.get("outcome")).root, "server"
        request = RestoreRequest(
            checkpoint=target, mode="code", dry_run=not args.confirm, resolutions=resolutions, paths=paths
        )
        with self._open(session_id=MCP_SESSION, config=EngineConfig(watcher=False)) as engine:
            settle_agents(engine, "code", dry_run=request.dry_run, choice=args.while_agent_runs)
            settle_git(engine, engine.get(target).id, "code", dry_run=request.dry_run, choice=args.git_choice)
            return restore_code_on_disk(engine, request), "store"

    def _forward(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        try:
            return forward(self.store, method, params, timeout, workspace=self.workspace)
        except RelayTimeoutError as exc:
            raise McpToolError(f"{exc} (it may still complete: list the checkpoints to see)") from None
        except RelayRefusedError as exc:
            raise McpToolError(str(exc)) from None
