"""``RetraceServer``: the pygls 2 language server that serves Retrace's JSON-RPC protocol.

It is built and run by :mod:`retrace.lsp.main` (``python -m retrace``, ``retrace serve``).
The server owns the per-workspace services (engine, agent, restore orchestration), which are
built in the background as soon as ``initialize`` arrives (:mod:`retrace.lsp.startup`); every
Retrace method awaits them, so a request sent right after ``initialize`` waits instead of
failing. Logs go to ``window/logMessage`` and stderr, never to pop-ups.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pydantic import BaseModel
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from retrace import __version__
from retrace.bootstrap import Services
from retrace.camel import dump
from retrace.engine.folders import FolderRouter
from retrace.engine.workspace import EscapeError, normalize_rel
from retrace.lsp.feature_lifecycle import FeatureSet
from retrace.lsp.rpc import FOLDER, NotReadyError, converter_factory
from retrace.lsp.services.metrics import ServerMetrics
from retrace.lsp.transport import TOO_LARGE, too_large_message
from retrace.protocol.methods import spec
from retrace.protocol.models import ServerSettings, TimelineDidChange

if TYPE_CHECKING:
    from pathlib import Path

    from pygls.server import ServerErrors

    from retrace.engine.folders import Folder
    from retrace.lsp.services.remote import ServerRemote
    from retrace.relay.server import RelayServer

log = logging.getLogger(__name__)

VERSION = __version__
"""Reported as ``serverInfo.version`` and compared with the client's at ``initialize``."""


class RetraceProtocol(LanguageServerProtocol):
    """pygls' protocol, except that nothing a client waits for is dropped silently: a request after
    ``shutdown`` or one that is not JSON-RPC 2.0 is answered with Invalid Request (pygls would
    only log it, and the client would wait forever). A second ``initialize`` is refused before
    pygls would reset the workspace documents and client capabilities of the running session."""

    initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        # ``{"jsonrpc": "2.0"}`` with neither method nor id is no message: pygls would fail to
        # build one and log a traceback. Kept as a plain dict, handle_message ignores it.
        if "jsonrpc" in data and "method" not in data and "id" not in data:
            return data
        return super().structure_message(data)

    def _answered_early(self, message: Any, method: Any, msg_id: Any) -> bool:
        """A message dealt with before pygls sees it: the transport's stand-in for an oversized
        body (:mod:`retrace.lsp.transport`), an id that is neither a string nor a number."""
        if method == TOO_LARGE:
            params = getattr(message, "params", None)
            size = params.get("bytes", 0) if isinstance(params, dict) else getattr(params, "bytes", 0)
            if isinstance(msg_id, int | str):
                error = JsonRpcInvalidRequest(too_large_message(size))
                self._send_response(msg_id, error=error.to_response_error())
            return True
        if msg_id is not None and not isinstance(msg_id, int | str):
            # JSON-RPC ids are strings or numbers; pygls would fail hashing this one.
            if method is not None:
                error = JsonRpcInvalidRequest(f"{method}: the request id must be a string or a number")
                self._send_response(None, error=error.to_response_error())  # type: ignore[arg-type]
            else:
                log.warning("ignored a response whose id is neither a string nor a number")
            return True
        return False

    def handle_message(self, message: Any) -> None:
        if not hasattr(message, "jsonrpc"):  # a JSON-RPC batch (an array): LSP has none
            log.warning("ignored a message that is not a JSON-RPC request or notification: %.80r", message)
            return
        method, msg_id = getattr(message, "method", None), getattr(message, "id", None)
        if self._answered_early(message, method, msg_id):
            return
        if method == lsp.CANCEL_REQUEST:
            cancel_id = getattr(getattr(message, "params", None), "id", None)
            if not isinstance(cancel_id, int | str):
                log.warning("ignored $/cancelRequest: its id is neither a string nor a number")
                return
        if method is not None and msg_id is not None and method != lsp.EXIT:
            reason = None
            if method == lsp.INITIALIZE and self.initialize_seen:
                reason = "initialize was already received; it is accepted once per server"
            elif self._shutdown:
                reason = "the server is shut down (after shutdown only exit is accepted)"
            elif getattr(message, "jsonrpc", None) != self.VERSION:
                reason = 'not a JSON-RPC 2.0 request ("jsonrpc": "2.0" is required)'
            if reason is not None:
                error = JsonRpcInvalidRequest(f"{method}: {reason}")
                self._send_response(msg_id, error=error.to_response_error())
                return
            if method == lsp.INITIALIZE:
                self.initialize_seen = True
        super().handle_message(message)


class RetraceServer(LanguageServer):
    """The JSON-RPC server; handlers receive it as their first argument."""

    def __init__(self) -> None:
        super().__init__(
            "retrace",
            VERSION,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            converter_factory=converter_factory,
            protocol_cls=RetraceProtocol,
        )
        self.settings = ServerSettings()
        self.editor_state: dict[str, Any] | None = None
        """Latest ``retrace/editor/didChangeState`` payload (plain JSON, camelCase)."""
        self.startup: asyncio.Future[Services] | None = None
        self.trusted = True
        """``initializationOptions.trusted``; ``False``: a read-only timeline
        (:mod:`retrace.lsp.services.trust`)."""
        self.remote: ServerRemote | None = None
        """The workspace's remote sync (built at start-up, before the engine opens)."""
        self.relay: RelayServer | None = None
        """The command line's socket while the services hold the store (:mod:`retrace.lsp.services.relay`)."""
        self.metrics = ServerMetrics(self)
        """Metrics, storage alerts and the scrape endpoint (started with the services)."""
        self.features = FeatureSet()
        """The features' lifecycle hooks, in order; filled once by the composition root
        (:func:`retrace.lsp.main.create_server`)."""
        self.first_answer = asyncio.Event()
        """Set once a ``retrace/timeline/tree`` request was answered (or failed): start-up's
        background work waits for it (:func:`retrace.lsp.startup.after_first_answer`)."""
        self.folder_services: dict[str, asyncio.Future[Services]] = {}
        """The services of every workspace folder but the first, by root (:mod:`retrace.lsp.folders`)."""
        self.folder_features: dict[str, FeatureSet] = {}
        """Their features (relay, automatic cleanup, remote), by root: one set per folder
        (:mod:`retrace.lsp.features.folder_features`), stopped before its engine closes."""
        self.folder_remotes: dict[str, ServerRemote] = {}
        """Their remote sync, by root (:mod:`retrace.lsp.folder_remotes`)."""
        self.workspace_folders: tuple[Folder, ...] = ()
        """The folders of a multi-root workspace, the first first (empty: one folder, or a client
        that did not declare ``multiRoot``); kept by :class:`retrace.lsp.folders.Folders`."""

    def dirty_paths(self) -> set[str]:
        """Paths the client reports as having unsaved editor changes, relative to the folder this
        call is for (:data:`FOLDER`). One folder: the editor's own ``path``. Several: each dirty
        editor's file is matched to its folder by :class:`~retrace.engine.folders.FolderRouter`
        (the editor's ``path`` is relative to the first folder only)."""
        editors = [e for e in (self.editor_state or {}).get("openEditors", []) if e.get("isDirty")]
        if len(self.workspace_folders) < 2:  # one folder: as ever
            return {e["path"] for e in editors if e.get("path")}
        out: set[str] = set()
        for editor in editors:
            uri = editor.get("uri")
            path = to_fs_path(uri) if isinstance(uri, str) and uri.startswith("file:") else None
            rel = self.scoped_rel(path) if path else None
            if rel is not None:
                out.add(rel)
        return out

    def scoped_rel(self, path: str, workspace: Path | None = None) -> str | None:
        """``path`` (absolute) relative to the folder this call is for (:data:`FOLDER`; the first
        by default) when that folder owns it (:meth:`FolderRouter.rel_in`), else ``None``. With
        one folder: ``normalize_rel`` against ``workspace`` (``None``: no answer)."""
        folders = self.workspace_folders
        if len(folders) < 2:  # one folder: as ever
            if workspace is None:
                return None
            try:
                return normalize_rel(path, workspace)
            except EscapeError:
                return None
        root = FOLDER.get() or folders[0].root
        return FolderRouter(folders).rel_in(path, root)

    # ------------------------------------------------------------------ services
    def _startup_of(self) -> asyncio.Future[Services] | None:
        """The services of the folder this call is for (:data:`FOLDER`; the first by default)."""
        root = FOLDER.get()
        if root is None:
            return self.startup
        task = self.folder_services.get(root)
        if task is None:
            raise NotReadyError(f"the workspace folder {root} is not open (it was removed)")
        return task

    async def services(self) -> Services:
        """The workspace services, waiting for start-up to finish; :class:`NotReadyError` otherwise."""
        if self.startup is None:
            raise NotReadyError("the server is not initialized yet (send initialize first)")
        task = self._startup_of()
        if task is None:
            raise NotReadyError("the server is not initialized yet (send initialize first)")
        try:
            return await asyncio.shield(task)
        except NotReadyError:
            raise
        except Exception as exc:
            raise NotReadyError(f"the workspace could not be opened: {exc}") from exc

    def services_if_ready(self) -> Services | None:
        root = FOLDER.get()
        task = self.startup if root is None else self.folder_services.get(root)
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    # ------------------------------------------------------------------ client capabilities
    def client_can_apply_edits(self) -> bool:
        workspace = self.client_capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    def client_resource_operations(self) -> set[str]:
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        ops = edit.resource_operations if edit else None
        return {str(op.value) for op in ops or []}

    # ------------------------------------------------------------------ outgoing messages
    def send_notification(self, method: str, payload: BaseModel) -> None:
        """Notify the client with a declared server → client notification."""
        if spec(method).direction != "serverNotification":
            raise ValueError(f"{method} is not a server → client notification")
        root = FOLDER.get()
        if root is not None:
            # Another folder than the first: its timeline changes name it; the rest (the agent's
            # events) belong to the first folder's chat and are not sent.
            if not isinstance(payload, TimelineDidChange):
                log.debug("%s of workspace folder %s not sent", method, root)
                return
            payload = payload.model_copy(update={"folder": root})
        self.protocol.notify(method, dump(payload))

    async def send_request(self, method: str, payload: BaseModel) -> Any:
        """Send a declared server → client request; returns the client's plain-JSON result."""
        if spec(method).direction != "serverRequest":
            raise ValueError(f"{method} is not a server → client request")
        return await self.protocol.send_request_async(method, dump(payload))

    # ------------------------------------------------------------------ errors
    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """Out-of-band errors go to the log only: pop-ups are the client's decision. A request
        answered with a deliberate error was already logged (INFO) where it was raised."""
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
