"""Handlers: ``retrace/remote/*`` (status, push, pull, sessions, open): one call each into the
remote of the request's folder (:mod:`retrace.lsp.services.remote`, :mod:`retrace.lsp.folder_remotes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lsp import folder_remotes
from retrace.lsp.services.remote import NO_REMOTE
from retrace.lsp.services.trust import require_trusted
from retrace.protocol.remote import (
    RemoteOpenParams,
    RemoteOpenResult,
    RemoteParams,
    RemotePullResult,
    RemotePushResult,
    RemoteSessionsResult,
    RemoteStatusResult,
    RemoteSyncView,
)
from retrace.sync.errors import RemoteError

if TYPE_CHECKING:
    from retrace.lsp.rpc import Handler
    from retrace.lsp.server import RetraceServer
    from retrace.lsp.services.remote import ServerRemote


async def _remote(ls: RetraceServer) -> ServerRemote:
    await ls.services()  # the remote is prepared with the store
    remote = folder_remotes.current(ls)  # the request's folder's (the first by default)
    if remote is None:
        raise RemoteError(NO_REMOTE)
    return remote


async def remote_status(ls: RetraceServer, params: RemoteParams) -> RemoteStatusResult:
    await ls.services()
    remote = folder_remotes.current(ls)
    if remote is None:
        return RemoteStatusResult(configured=False, status=None, sync=RemoteSyncView(state="off"))
    return await remote.status(params.remote)


async def remote_push(ls: RetraceServer, params: RemoteParams) -> RemotePushResult:
    return await (await _remote(ls)).push(params.remote)


async def remote_pull(ls: RetraceServer, params: RemoteParams) -> RemotePullResult:
    require_trusted(ls, "Pulling from a remote")
    services = await ls.services()
    return await (await _remote(ls)).pull(services, params.remote)


async def remote_sessions(ls: RetraceServer, params: RemoteParams) -> RemoteSessionsResult:
    return await (await _remote(ls)).sessions(params.remote)


async def remote_open(ls: RetraceServer, params: RemoteOpenParams) -> RemoteOpenResult:
    require_trusted(ls, "Opening a remote session")
    services = await ls.services()
    return await (await _remote(ls)).open(services, params)


HANDLERS: dict[str, Handler] = {
    "retrace/remote/status": remote_status,
    "retrace/remote/push": remote_push,
    "retrace/remote/pull": remote_pull,
    "retrace/remote/sessions": remote_sessions,
    "retrace/remote/open": remote_open,
}
