"""The folders of a multi-root workspace inside the server: one engine, store, baseline and
set of features (command-line relay, automatic cleanup, remote sync:
:mod:`retrace.lsp.features.folder_features`) per folder, and the routing of a request to its
folder.

The first folder is served exactly as a single-folder workspace always was
(:func:`retrace.lsp.startup.start_services`: the agent, the remote sync, the metrics). When the
client declares ``multiRoot`` (:class:`~retrace.protocol.models.InitializationOptions`), every
further folder is opened once the first is ready, with :func:`retrace.bootstrap.open_services` and
that folder's own default store (:func:`~retrace.engine.store.home.default_store_dir`: the rule the
command line and other agents' hooks follow, so ``retrace`` and hooks run in that folder reach it
through its relay), and closed when the client removes it
(``workspace/didChangeWorkspaceFolders``). Which folder owns a path is
:class:`retrace.engine.folders.FolderRouter`'s rule, the only one.

Routing: a request naming ``folder`` (a root, or a name no other folder has) runs with
:data:`retrace.lsp.rpc.FOLDER` set to that folder's root, and ``RetraceServer.services()`` answers
that folder's services; naming the first folder is the same as naming none. Only the methods in
:data:`PER_FOLDER` (timeline, checkpoints, diffs, restores and their undo, file history, export,
naming a checkpoint, stats, verify, remote sync: :mod:`retrace.lsp.folder_remotes`) are served per
folder; the others
(the agent, settings) are the first folder's and refuse another folder
(:class:`FolderNotServed`). A ``retrace/timeline/didChange`` of another folder carries its
``folder``; the other folders' agent events are not sent (the chat is the first folder's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.uris import to_fs_path

from retrace.engine.errors import RetraceError
from retrace.engine.folders import Folder, FolderRouter
from retrace.lsp import folder_remotes
from retrace.lsp.feature_lifecycle import Feature, FeatureSet
from retrace.lsp.rpc import FOLDER

if TYPE_CHECKING:
    from lsprotocol import types as lsp

    from retrace.bootstrap import Services
    from retrace.engine.gate import EngineGate
    from retrace.engine.models import Checkpoint
    from retrace.lsp.server import RetraceServer
    from retrace.lsp.services.remote import ServerRemote
    from retrace.protocol.models import InitializationOptions

log = logging.getLogger(__name__)

T = TypeVar("T")

PER_FOLDER = frozenset(
    {
        "retrace/timeline/get",
        "retrace/timeline/tree",
        "retrace/session/list",
        "retrace/checkpoint/get",
        "retrace/checkpoint/fileContent",
        "retrace/checkpoint/diff",
        "retrace/checkpoint/restore",
        "retrace/restore/hunks",
        "retrace/restore/hunk",
        "retrace/restore/undoLast",
        "retrace/file/history",
        "retrace/workspace/files",
        "retrace/export/git",
        "retrace/bookmark/name",
        "retrace/stats",
        "retrace/store/verify",
        "retrace/remote/status",
        "retrace/remote/push",
        "retrace/remote/pull",
        "retrace/remote/sessions",
        "retrace/remote/open",
    }
)
"""The methods a request may send to another folder than the first (``folder``)."""


class FolderNotServed(RetraceError):  # noqa: N818 (contract names)
    """A method only the first folder serves was asked for another folder."""

    code = "folderNotServed"


def lsp_folders(items: Sequence[lsp.WorkspaceFolder] | None) -> list[Folder]:
    """The client's folders as :class:`Folder`, in order; ones that are no local path are skipped."""
    out: list[Folder] = []
    for item in items or []:
        path = to_fs_path(item.uri)
        if path:
            out.append(Folder(item.name or Path(path).name, str(Path(path))))
    return out


FolderFeatures = Callable[["RetraceServer", str, "ServerRemote"], Sequence[Feature]]
"""The composition root's registry of a further folder's features
(:func:`retrace.lsp.main.folder_features`)."""


class Folders:
    """The server's folders: the first (served by ``RetraceServer.startup``) and the others (their
    services and features in ``RetraceServer.folder_services`` / ``folder_features``, by root);
    ``features``: the registry each further folder's :class:`FeatureSet` is built from."""

    def __init__(self, features: FolderFeatures) -> None:
        self.features = features
        self.router = FolderRouter([])
        self.first: Folder | None = None
        self.options: InitializationOptions | None = None
        """Set when the client declared ``multiRoot``: the further folders are opened with them."""

    # ------------------------------------------------------------------ routing
    def scope(self, method: str, key: str) -> str | None:
        """The root a request naming folder ``key`` runs in (``None``: the first folder)."""
        folder = self.router.folder(key)
        if self.first is not None and folder.root == self.first.root:
            return None
        if method not in PER_FOLDER:
            first = self.first.name if self.first is not None else "the first folder"
            raise FolderNotServed(f"{method} is served only in the first folder ({first}) for now")
        return folder.root

    # ------------------------------------------------------------------ opening and closing
    def start(self, server: RetraceServer, folders: list[Folder], options: InitializationOptions) -> None:
        """At ``initialize``: the first folder is served by the caller; the others (when the
        client declared ``multiRoot``) are opened once the first is ready."""
        self.first = folders[0] if folders else None
        self.router = FolderRouter(folders[:1])
        # Nested folders: the first opened keeps the files (a folder inside or around it is skipped).
        if options.multi_root:
            self.options = options
            access = ServerFolderAccess(server, self)
            if server.startup is not None:
                server.startup.add_done_callback(lambda task: _attach(task, access))
            server.workspace_folders = self.router.folders
            for folder in folders[1:]:
                self.add(server, folder)

    def add(self, server: RetraceServer, folder: Folder) -> None:
        """Open a further folder in the background (a known root, or no ``multiRoot``: nothing)."""
        if self.options is None:
            return
        overlap = self.router.overlapping(folder)
        if overlap is not None:
            # Two stores would both record (and restore) the inner folder's files: the folder
            # already open keeps them.
            log.warning(
                "workspace folder %s not opened: it overlaps %s, whose store records its files",
                folder.root,
                overlap.root,
            )
            return
        router = self.router.with_folder(folder)
        if router is self.router:
            return
        self.router = router
        server.workspace_folders = router.folders
        task = asyncio.ensure_future(self._open(server, folder, self.options))
        server.folder_services[folder.root] = task
        task.add_done_callback(lambda t: _report(folder, t))

    def detach(self, server: RetraceServer, root: str) -> asyncio.Future[Services] | None:
        """Take a folder the client removed out of the routing at once (new requests for it are
        refused); its services, to :meth:`close` next. The first folder stays served (its agent
        may run): ``None``."""
        folder = self.router.folder(root)
        if self.first is not None and folder.root == self.first.root:
            log.warning("the first workspace folder %s was removed: it stays open until a restart", root)
            return None
        self.router = self.router.without(folder.root)
        if self.options is not None:
            server.workspace_folders = self.router.folders
        return server.folder_services.pop(folder.root, None)

    async def close(self, server: RetraceServer, root: str, task: asyncio.Future[Services]) -> None:
        """Let a detached folder's store go, once the call in its gate has ended."""
        await _close(server, root, task)

    async def close_all(self, server: RetraceServer) -> None:
        """Close every further folder (shutdown)."""
        others = list(server.folder_services.items())
        server.folder_services.clear()
        for root, task in others:
            await _close(server, root, task)

    async def _open(self, server: RetraceServer, folder: Folder, options: InitializationOptions) -> Services:
        from retrace.bootstrap import open_services
        from retrace.engine.store.home import default_store_dir
        from retrace.lsp import editor_models
        from retrace.lsp.host import LspAgentHost
        from retrace.lsp.startup import agent_settings, engine_config

        FOLDER.set(folder.root)  # this task's context: its notifications name the folder
        if server.startup is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(server.startup)  # the first folder answers first
        root = Path(folder.root)
        store = await asyncio.to_thread(default_store_dir, root)
        self._refuse_shared_store(server, store)
        settings = server.settings
        remote = await asyncio.to_thread(folder_remotes.prepare, server, folder, store, settings)
        services = await open_services(
            root,
            store,
            LspAgentHost(server),
            agent_settings(settings, None, trusted=server.trusted),
            config=engine_config(settings),
            blob_source=remote.blob_source(),
            editor_models=editor_models.of(server),
        )
        if folder.root not in server.folder_services:  # removed while it opened
            services.close()
            raise RetraceError(f"{folder.root} was removed from the workspace while it opened")
        # Its relay, cleanup and remote, through the features' lifecycle (stopped in order by _close).
        features = FeatureSet(self.features(server, folder.root, remote))
        server.folder_features[folder.root] = features
        await features.start(services)
        if folder.root not in server.folder_services:  # removed while its features started
            server.folder_features.pop(folder.root, None)
            await asyncio.to_thread(features.stop, 0.0)
            await asyncio.to_thread(services.close)
            raise RetraceError(f"{folder.root} was removed from the workspace while it opened")
        log.info("workspace folder %s ready (store: %s)", folder.root, store)
        return services

    def _refuse_shared_store(self, server: RetraceServer, store: Path) -> None:
        """Two folders never share one store (``$RETRACE_STORE`` names one for every folder)."""
        first = server.services_if_ready()
        if first is not None and first.engine.store_dir == store:
            raise RetraceError(f"the store {store} is the first folder's: each folder needs its own")


class ServerFolderAccess:
    """The agent's view of the other folders (:class:`retrace.agent.folders.FolderAccess`)."""

    def __init__(self, server: RetraceServer, folders: Folders) -> None:
        self.server = server
        self.owner = folders

    def folders(self) -> tuple[Folder, ...]:
        """The first folder and every other one that is open (one still opening is left out)."""
        return tuple(f for i, f in enumerate(self.owner.router.folders) if i == 0 or self.gate(f.root))

    def gate(self, root: str) -> EngineGate | None:
        task = self.server.folder_services.get(root)
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result().gate

    def dirty_paths(self, root: str) -> frozenset[str]:
        """The editor's dirty documents of the folder at ``root``, relative to it (the server's
        one rule: :meth:`RetraceServer.dirty_paths` run in that folder)."""
        token = FOLDER.set(root)
        try:
            return frozenset(self.server.dirty_paths())
        finally:
            FOLDER.reset(token)

    async def created(self, root: str, checkpoint: Checkpoint) -> None:
        """Tell the editor of a checkpoint the agent made in the folder at ``root``, and that
        folder's features (its remote counts it)."""
        from retrace.agent.notifications import CheckpointCreated
        from retrace.lsp.services import timeline
        from retrace.protocol.models import TimelineDidChange

        token = FOLDER.set(root)
        try:
            services = self.server.services_if_ready()
            if services is None:
                return
            change = await services.run(lambda engine: timeline.change_of(services, engine, checkpoint))
            change = change or TimelineDidChange(head=checkpoint.id, checkpoint=checkpoint)
            self.server.send_notification("retrace/timeline/didChange", change)
            features = self.server.folder_features.get(root)
            if features is not None:
                event = CheckpointCreated(session_id=checkpoint.session_id, checkpoint=checkpoint)
                await features.on_event(event)
        finally:
            FOLDER.reset(token)


def _attach(task: asyncio.Future[Services], access: ServerFolderAccess) -> None:
    """The first folder's agent sees the other folders once its services are open."""
    if not task.cancelled() and task.exception() is None:
        task.result().agent.folder_access = access


def in_folder(root: str, call: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """``call`` run with :data:`FOLDER` set to ``root`` (a relay thread's calls carry no context)."""

    async def run(*args: Any) -> T:
        token = FOLDER.set(root)
        try:
            return await call(*args)
        finally:
            FOLDER.reset(token)

    return run


async def _close(server: RetraceServer, root: str, task: asyncio.Future[Services]) -> None:
    from retrace.lsp.services.remote import SHUTDOWN_WAIT_S
    from retrace.lsp.startup import stop_agent

    if not task.done():
        # Never cancelled: an engine opening in a thread would keep its lock. Once open, the
        # task sees the folder gone and closes it itself.
        with contextlib.suppress(Exception):
            await task
        return
    if task.cancelled() or task.exception() is not None:
        return
    services = task.result()
    # Its features first, in the registry's order (the relay first: no relayed call reaches an
    # engine that let go; the remote last, pushing what is pending within the wait).
    features = server.folder_features.pop(root, None)
    if features is not None:
        await asyncio.to_thread(features.stop, SHUTDOWN_WAIT_S)
    try:
        await stop_agent(services)
        await services.run(lambda _engine: None)  # the call in the gate, if any, has ended
    finally:
        await asyncio.to_thread(services.close)
    log.info("workspace folder %s closed", services.workspace)


def _report(folder: Folder, task: asyncio.Future[Services]) -> None:
    if task.cancelled():
        return
    if (exc := task.exception()) is not None:
        log.error("opening the workspace folder %s failed: %s", folder.root, exc)
