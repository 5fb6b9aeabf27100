"""A further folder's features (multi-root): its command line's relay, its automatic cleanup and
its remote sync, through the same lifecycle as the first folder's
(:mod:`retrace.lsp.feature_lifecycle`).

One :class:`~retrace.lsp.feature_lifecycle.FeatureSet` per further folder, built by the
composition root's registry (:func:`retrace.lsp.main.folder_features`) when the folder's services
are open (:mod:`retrace.lsp.folders`), started in that folder's context (:data:`~retrace.lsp.rpc.FOLDER`
set: its notifications name it), and stopped, in the registry's order, when the client removes
the folder or the server shuts down — always before the folder's engine closes. ``stop`` may run
on a worker thread (the remote's last push blocks up to its wait) and more than once: each
feature's stop is idempotent and thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from retrace.agent.notifications import CheckpointCreated
from retrace.lsp import folder_remotes, folder_settings
from retrace.lsp.feature_lifecycle import Feature
from retrace.lsp.folders import in_folder
from retrace.lsp.host import LspAgentHost
from retrace.lsp.services import relay, relay_restore
from retrace.lsp.services.relay_context import RelayContext

if TYPE_CHECKING:
    from retrace.agent.notifications import EventBase
    from retrace.bootstrap import Services
    from retrace.lsp.server import RetraceServer
    from retrace.lsp.services.remote import ServerRemote
    from retrace.relay.server import RelayServer


class FolderRelayFeature(Feature):
    """The folder's command-line relay: ``retrace`` and other agents' hooks run in the folder
    reach its store through the server (the first folder's is :mod:`.cli_relay`)."""

    name = "relay"

    def __init__(self, server: RetraceServer, root: str) -> None:
        self.server = server
        self.root = root
        self.relay: RelayServer | None = None

    async def start(self, services: Services) -> None:
        ctx = RelayContext(
            services.gate,
            services.workspace,
            notify=in_folder(self.root, LspAgentHost(self.server).emit),
            restore=in_folder(self.root, relay_restore.editor_restore(self.server, services)),
        )
        self.relay = relay.listen(ctx, asyncio.get_running_loop())

    def stop(self, wait_s: float) -> None:
        relay.stop(self.relay)  # RelayServer.close is idempotent


class FolderCleanupFeature(Feature):
    """The folder's automatic cleanup (:func:`retrace.lsp.folder_settings.start_cleanup`)."""

    name = "auto_gc"

    def __init__(self, server: RetraceServer) -> None:
        self.server = server
        self.task: asyncio.Task[None] | None = None

    async def start(self, services: Services) -> None:
        self.task = folder_settings.start_cleanup(self.server, services)

    def stop(self, wait_s: float) -> None:
        """Cancel it (from any thread; a loop already closed has nothing left to cancel). A
        cleanup inside the engine's gate finishes its call there first: the folder's close
        waits for the gate."""
        task, self.task = self.task, None
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):
                task.get_loop().call_soon_threadsafe(task.cancel)


class FolderRemoteFeature(Feature):
    """The folder's remote sync (prepared before its engine opened: :func:`folder_remotes.prepare`):
    reachable by ``retrace/remote/*`` naming the folder once started; stopping pushes what is
    pending within the wait."""

    name = "remote"

    def __init__(self, server: RetraceServer, root: str, remote: ServerRemote) -> None:
        self.server = server
        self.root = root
        self.remote = remote

    async def start(self, services: Services) -> None:
        self.server.folder_remotes[self.root] = self.remote
        self.remote.start()
        await folder_remotes.apply_all(self.server, self.server.settings)  # the first folder records its name

    async def on_event(self, event: CheckpointCreated | EventBase) -> None:
        if isinstance(event, CheckpointCreated):
            self.remote.checkpoint_created()  # its push schedule counts the folder's checkpoints

    def stop(self, wait_s: float) -> None:
        folder_remotes.stop(self.server, self.root, wait_s)  # once: it leaves folder_remotes
