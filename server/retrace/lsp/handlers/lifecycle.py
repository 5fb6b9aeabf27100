"""LSP lifecycle: ``initialize`` starts the workspace services, ``shutdown`` closes them,
``workspace/didChangeConfiguration`` pulls fresh settings, ``workspace/didChangeWorkspaceFolders``
opens and closes the further folders of a multi-root workspace (:mod:`retrace.lsp.folders`)."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.uris import to_fs_path

from retrace import __version__
from retrace.camel import validation_message
from retrace.engine.errors import RetraceError
from retrace.lsp.folders import Folders, lsp_folders
from retrace.lsp.log import client_ready
from retrace.lsp.rpc import NotReadyError
from retrace.lsp.services.remote import SHUTDOWN_WAIT_S
from retrace.lsp.settings import parse_settings, pull_settings
from retrace.lsp.startup import Services, shutdown, start_services, stop_agent
from retrace.protocol.models import InitializationOptions, ServerSettings

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer

log = logging.getLogger(__name__)


def workspace_root(params: lsp.InitializeParams) -> Path | None:
    """The first workspace folder, else rootUri, else rootPath."""
    uris = [folder.uri for folder in params.workspace_folders or []]
    if params.root_uri:
        uris.append(params.root_uri)
    for uri in uris:
        path = to_fs_path(uri)
        if path:
            return Path(path)
    return Path(params.root_path) if params.root_path else None


def initialization_options(raw: Any) -> InitializationOptions:
    """Options with invalid settings replaced by defaults (logged), never a failed start."""
    raw = raw if isinstance(raw, dict) else {}
    try:
        return InitializationOptions.model_validate(raw)
    except ValidationError as exc:
        log.error("initializationOptions: %s", validation_message("initialize", exc))
    settings = parse_settings(raw.get("settings"))
    store_dir, legacy = raw.get("storeDir"), raw.get("legacyStoreDir")
    return InitializationOptions(
        store_dir=store_dir if isinstance(store_dir, str) else None,
        legacy_store_dir=legacy if isinstance(legacy, str) else None,
        settings=settings or ServerSettings(),
        # Anything but an explicit true is distrust: a malformed flag must not unlock the agent.
        trusted=raw.get("trusted", True) is True,
        multi_root=raw.get("multiRoot") is True,
    )


VERSION_MISMATCH_CODE = 1
"""LSP's ``InitializeErrorCodes.unknownProtocolVersion``: the client and server disagree."""


class VersionMismatchError(JsonRpcException):
    """The extension and the server come from different releases (an environment built for another
    version). ``data.retry`` is false: retrying the same server cannot help."""

    def __init__(self, client_version: str, server_version: str) -> None:
        super().__init__(
            f"The Retrace server is version {server_version} but the extension is version "
            f"{client_version}. Run 'Retrace: Rebuild Server Environment' (or, if retrace.pythonPath "
            f"is set, install retrace {client_version} into that interpreter).",
            VERSION_MISMATCH_CODE,
            {"retry": False, "serverVersion": server_version, "clientVersion": client_version},
        )


def check_client_version(client_version: str | None, server_version: str = __version__) -> None:
    """The version handshake: a client that states its version must match the server's."""
    if client_version is not None and client_version != server_version:
        log.error("initialize: extension %s, server %s: refused", client_version, server_version)
        raise VersionMismatchError(client_version, server_version)


def register_lifecycle(server: RetraceServer, folders: Folders) -> None:
    _register_folder_changes(server, folders)

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        if server.startup is not None:
            # A second initialize would replace the open store and the running agent (leaking
            # the first, with its lock) or drop the workspace altogether: refuse it.
            raise JsonRpcInvalidRequest("initialize was already received; it is accepted once per server")
        options = initialization_options(params.initialization_options)
        check_client_version(options.client_version)
        server.settings = options.settings
        server.trusted = options.trusted
        root = workspace_root(params)
        if root is None:
            log.error("initialize: no workspace folder is open; Retrace needs one")
            failed: asyncio.Future[Services] = asyncio.get_running_loop().create_future()
            failed.set_exception(
                NotReadyError("no workspace folder is open (open a folder, then restart Retrace)")
            )
            server.startup = failed
            return
        log.info(
            "initialize: workspace %s, python %s, %s, settings %s",
            root,
            sys.executable,
            "trusted" if options.trusted else "UNTRUSTED (read-only timeline)",
            options.settings.model_dump_json(by_alias=True),
        )
        server.startup = asyncio.ensure_future(start_services(server, root, options))
        server.startup.add_done_callback(_report_startup)
        folders.start(server, lsp_folders(params.workspace_folders), options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(params: lsp.InitializedParams) -> None:
        client_ready()
        await pull_settings(server)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        await pull_settings(server)

    @server.feature(lsp.SHUTDOWN)
    async def on_shutdown(params: None) -> None:
        if server.startup is not None and not server.startup.done():
            try:
                await server.startup
            except Exception:
                log.debug("start-up had failed; nothing to close")
        services = server.services_if_ready()
        if services is not None:
            await stop_agent(services)
        await folders.close_all(server)
        await asyncio.to_thread(server.features.stop, SHUTDOWN_WAIT_S)  # pushes what is pending
        await asyncio.to_thread(shutdown, server)


def _register_folder_changes(server: RetraceServer, folders: Folders) -> None:
    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        # The routing changes at once (in arrival order with the requests); stores close after.
        closing = []
        for folder in lsp_folders(params.event.removed):
            try:
                task = folders.detach(server, folder.root)
            except RetraceError as exc:
                log.warning("workspace folder %s removed: %s", folder.root, exc)
                continue
            if task is not None:
                closing.append((folder.root, task))
        for folder in lsp_folders(params.event.added):
            folders.add(server, folder)
        for root, task in closing:
            await folders.close(server, root, task)


def _report_startup(task: asyncio.Future[Any]) -> None:
    if task.cancelled():
        return
    if (exc := task.exception()) is not None:
        log.error("opening the workspace failed: %s", exc)
