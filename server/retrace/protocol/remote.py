"""Remote sync on the wire (``retrace/remote/*``): status, push, pull, the sessions in the bucket,
opening one of them here, and the progress notification. The payloads are the sync models
(:mod:`retrace.sync.models`); the server's scheduler and :class:`~retrace.sync.service.RemoteService`
decide everything, the client only renders and forwards.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from retrace.camel import CamelModel
from retrace.sync.models import OpenReport, PullReport, PushReport, RemoteSession, RemoteStatus, SyncProgress

SyncState = Literal["idle", "pushing", "synced", "error", "off"]
"""``off``: no remote configured; ``idle``: configured, nothing pushed by this server yet;
``pushing``: a push runs; ``synced``: the last push succeeded; ``error``: the last push failed
(the scheduler retries with back-off)."""


class RemoteSettings(CamelModel):
    """The ``retrace.remote.*`` settings. With ``url`` set, the server configures remote ``name``
    in the store (``remote add`` semantics) and syncs to it; credentials and the encryption key
    never come from settings (the process environment, or the extension's SecretStorage)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(default="origin", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")
    url: str | None = None
    """``s3://bucket/prefix``; empty: no remote from settings (one added by the CLI still syncs)."""
    endpoint: str | None = None
    region: str | None = None
    workspace_name: str | None = None
    """Appended to the prefix (default: the workspace folder's name)."""
    encrypt: bool = False
    every_checkpoints: int = Field(default=10, ge=1)
    every_minutes: float = Field(default=5.0, gt=0)

    @field_validator("url", "endpoint", "region", "workspace_name", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """An empty text field in the settings UI means "not set"."""
        return None if isinstance(value, str) and not value.strip() else value


class RemoteParams(CamelModel):
    remote: str | None = None
    """The remote's name; absent: the only configured one."""


class RemoteOpenParams(CamelModel):
    session_id: str = Field(min_length=1, max_length=200)
    remote: str | None = None
    store_id: str | None = Field(default=None, max_length=200)
    """Which machine's copy (store id) to open; absent: the newest one."""


class RemoteSyncView(CamelModel):
    """What this server's scheduler is doing (the status bar's source)."""

    state: SyncState
    remote: str | None = None
    progress: SyncProgress | None = None
    """The running push's latest progress (``pushing`` only)."""
    last_report: PushReport | None = None
    last_error: str | None = None
    """One line; never a credential."""
    at: str | None = None
    """ISO 8601 time of the last change of state."""
    pending_checkpoints: int = 0
    """Checkpoints made since the last push began (a push is due at ``everyCheckpoints``)."""
    retry_in_seconds: float | None = None
    """After an error: seconds until the next automatic attempt."""


class RemoteStatusResult(CamelModel):
    configured: bool
    status: RemoteStatus | None
    """The remote's local record (last push, last error, what is pending); ``None`` when none is
    configured."""
    sync: RemoteSyncView


class RemotePushResult(CamelModel):
    report: PushReport


class RemotePullResult(CamelModel):
    report: PullReport


class RemoteSessionsResult(CamelModel):
    sessions: list[RemoteSession]
    """Newest first; ``openedLocally`` marks those already in this store."""


class RemoteOpenResult(CamelModel):
    report: OpenReport
    session_id: str
    """The session now in the local timeline (focus it)."""
