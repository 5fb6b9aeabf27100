"""What the services may use of the language server: :class:`ServerPort`.

The services are below the server (it composes them); they are handed the server object but see
it only through this protocol, so none of them imports ``lsp/server.py`` (or the agent host built
on it) back. Members are read-only properties where they are data, so the server's attributes of
narrower types satisfy them. Anything a service needs from the connection goes here first, with
the reason it is needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lsprotocol import types as lsp
    from pydantic import BaseModel
    from pygls.protocol import LanguageServerProtocol
    from pygls.workspace import Workspace

    from retrace.agent.notifications import EventBase
    from retrace.bootstrap import Services
    from retrace.protocol.models import ServerSettings


AgentEmit = Callable[["EventBase"], Awaitable[None]]
"""The agent host's ``emit`` (``lsp/host.py``): a notification to the client, and what follows
from it (the timeline's change, the remote's schedule, the metrics). Handed to the services that
record checkpoints outside a turn (a bookmark, a relay call), so they never build the host."""


class StorageCheck(Protocol):
    """The server's metrics, as the automatic cleanup uses them (a new storage measure)."""

    async def check(self) -> None: ...


class ServerPort(Protocol):
    @property
    def settings(self) -> ServerSettings:
        """The client's settings, validated (pulled again on every change)."""
        ...

    @property
    def trusted(self) -> bool:
        """Workspace trust as the editor reported it (``False``: a read-only timeline)."""
        ...

    @property
    def editor_state(self) -> dict[str, Any] | None:
        """The latest ``retrace/editor/didChangeState`` (plain JSON, camelCase)."""
        ...

    @property
    def metrics(self) -> StorageCheck: ...

    @property
    def workspace(self) -> Workspace:
        """The open documents the client synchronised (their text, versions and encoding)."""
        ...

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    def send_notification(self, method: str, payload: BaseModel) -> None: ...

    async def send_request(self, method: str, payload: BaseModel) -> Any: ...

    def workspace_apply_edit_async(
        self, params: lsp.ApplyWorkspaceEditParams
    ) -> Awaitable[lsp.ApplyWorkspaceEditResult]: ...

    def services_if_ready(self) -> Services | None: ...

    def client_can_apply_edits(self) -> bool: ...

    def client_resource_operations(self) -> set[str]: ...

    def dirty_paths(self) -> set[str]: ...

    def scoped_rel(self, path: str, workspace: Path | None = None) -> str | None: ...
