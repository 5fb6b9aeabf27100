"""Remote sync for every folder of a multi-root workspace: one :class:`ServerRemote` per folder's
store, each under its own key prefix.

Which name each folder syncs under is :func:`retrace.sync.identity.folder_workspace_names`'s rule
(the first folder as a single-folder workspace always did; every other one
``<retrace.remote.workspaceName>/<folder name>``, else its own name; a folder whose name another
folder already has does not sync, and says why). In a workspace of several folders every remote of
every folder's store records its folder (the store card names it), so opening or pulling a
session another folder pushed is refused (:func:`retrace.sync.identity.check_card`).

The first folder's remote is ``RetraceServer.remote`` (built by :mod:`retrace.lsp.startup`); the
others are in ``RetraceServer.folder_remotes`` by root, prepared before their engine opens (so
remote-only blobs read through), started once it is open, stopped when the folder closes. The
``retrace/remote/*`` requests naming a ``folder`` reach that folder's remote
(:data:`retrace.lsp.folders.PER_FOLDER`). Another folder's push progress is not sent (the
client's sync indicator is the first folder's); its state is in ``retrace/remote/status``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from retrace.engine.folders import Folder, folder_name
from retrace.lsp.rpc import FOLDER
from retrace.protocol.remote import RemoteSettings
from retrace.sync.identity import FolderName, folder_workspace_names

if TYPE_CHECKING:
    from retrace.lsp.server import RetraceServer
    from retrace.lsp.services.remote import ServerRemote
    from retrace.protocol.models import ServerSettings


def remote_settings(server: RetraceServer, settings: ServerSettings) -> RemoteSettings:
    """The remote settings the server follows: none from an untrusted workspace (its settings
    could send the code to someone else's bucket); a remote added by the CLI still syncs."""
    return settings.remote if server.trusted else RemoteSettings()


def identities(server: RetraceServer, settings: ServerSettings) -> dict[str, FolderName]:
    """Each open folder's remote name, by root (empty: not a multi-root workspace)."""
    listed = server.workspace_folders
    names = folder_workspace_names(
        settings.remote.workspace_name, [(f.name, folder_name(f.root)) for f in listed]
    )
    return {f.root: n for f, n in zip(listed, names, strict=True)}


def first_identity(server: RetraceServer, settings: ServerSettings) -> FolderName | None:
    """The first folder's remote name when the workspace has several folders, else ``None``
    (a single folder: exactly as before)."""
    listed = server.workspace_folders
    if len(listed) < 2:
        return None
    first = identities(server, settings)[listed[0].root]
    # Its remote name stays the one it always had (the settings', else the one configured):
    # only the folder is recorded.
    return FolderName(None, first.error, first.folder)


def prepare(server: RetraceServer, folder: Folder, store: Path, settings: ServerSettings) -> ServerRemote:
    """A further folder's remote, configured before its engine opens (never raises)."""
    from retrace.lsp.services.remote import ServerRemote

    identity = identities(server, settings).get(folder.root)

    def changed(change: object) -> None:
        from retrace.protocol.models import TimelineDidChange

        if isinstance(change, TimelineDidChange):
            token = FOLDER.set(folder.root)
            try:
                server.send_notification("retrace/timeline/didChange", change)
            finally:
                FOLDER.reset(token)

    missing = FolderName(None, f"folder {folder.name!r} is not open")
    return ServerRemote.prepare(
        store,
        Path(folder.root),
        remote_settings(server, settings),
        lambda _view: None,
        changed,
        identity=identity if identity is not None else missing,
    )


async def apply_all(server: RetraceServer, settings: ServerSettings) -> None:
    """New remote settings, or new folders, reach every folder's remote (each with its name
    recomputed: the first folder's store records its folder once a second folder is open)."""
    remote = remote_settings(server, settings)
    names = identities(server, settings)
    token = FOLDER.set(None)  # the first folder's progress is the first folder's, whoever asks
    try:
        if server.remote is not None:
            await asyncio.to_thread(server.remote.apply, remote, first_identity(server, settings))
        for root, sync in list(server.folder_remotes.items()):
            identity = names.get(root)
            if identity is not None:
                await asyncio.to_thread(sync.apply, remote, identity)
    finally:
        FOLDER.reset(token)


def current(server: RetraceServer) -> ServerRemote | None:
    """The remote of the folder this request is for (:data:`FOLDER`; the first by default)."""
    root = FOLDER.get()
    return server.remote if root is None else server.folder_remotes.get(root)


def stop(server: RetraceServer, root: str, wait_s: float) -> None:
    """Stop a further folder's remote (what is pending pushed within ``wait_s``)."""
    sync = server.folder_remotes.pop(root, None)
    if sync is not None:
        sync.stop(wait_s)
