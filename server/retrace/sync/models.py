"""The models of remote sync (CamelModel: camelCase on the wire, in ``remote.json`` and in
``--json`` output). No model ever holds a credential or an encryption key."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from retrace.camel import CamelModel

SyncPhase = Literal["blobs", "journals", "indexes", "done"]


class RemoteConfig(CamelModel):
    """One configured remote (an entry of ``<store>/remote.json``)."""

    name: str
    url: str
    """``s3://bucket/prefix`` as given (the workspace name is appended to form the key prefix)."""
    endpoint: str | None = None
    """S3 endpoint URL (``None``: AWS)."""
    region: str | None = None
    workspace_name: str
    """The key prefix's last part(s): ``<prefix>/<workspace name>/`` (:mod:`retrace.sync.identity`)."""
    folder: str | None = None
    """The folder of a multi-root workspace this store records (set by the server), written on the
    store card; opening a session whose card names another folder is refused."""
    encrypt: bool = False
    key_id: str | None = None
    """Id of the encryption key (the key itself is never stored here)."""
    every_checkpoints: int = 10
    every_minutes: float = 5
    local_cache_hours: float = 24
    local_cache_bytes: int | None = None
    retention_days: float = 30
    max_concurrency: int = 4
    max_bytes_per_second: int | None = None


class SyncProgress(CamelModel):
    remote: str
    phase: SyncPhase
    done: int
    total: int
    bytes_done: int
    bytes_total: int


class PushReport(CamelModel):
    remote: str
    packs: int
    blobs: int
    segments: int
    bytes: int
    seconds: float
    up_to_date: bool


class PullReport(CamelModel):
    remote: str
    sessions: int
    segments: int
    bytes: int
    skipped: list[str] = Field(default_factory=list)
    """One line per session (or pack index) left as it was because what the remote holds for it
    failed its checks."""


class RemoteStatus(CamelModel):
    remote: str
    url: str
    endpoint: str | None
    encrypt: bool
    last_push: str | None
    """ISO 8601 time of the last successful push."""
    last_error: str | None
    pending_checkpoints: int
    pending_bytes: int
    outbox: int


class RemoteSession(CamelModel):
    session_id: str
    store_id: str
    machine: str
    workspace_name: str
    workspace_path: str
    first_at: str | None
    last_at: str | None
    bytes: int
    segments: int
    generation: int
    opened_locally: bool


class OpenReport(CamelModel):
    session_id: str
    store_id: str
    checkpoints: int
    bytes: int
    skipped: list[str] = Field(default_factory=list)
    """One line per object left out because it failed its checks (an earlier session the opened
    one builds on, a pack index): damaged or foreign, never opened."""


class RemoteVerifyReport(CamelModel):
    remote: str
    segments: int
    unsealed: int
    """Segments pushed by Retrace 0.1.0, before segments were sealed (only their size is checked)."""
    packs: int
    packs_hashed: bool
    """Whether every pack object was downloaded and its content hash checked (``--packs``)."""
    damaged: list[str] = Field(default_factory=list)
    """One line per damaged or foreign object."""


class RemoteGcReport(CamelModel):
    remote: str
    dry_run: bool
    sessions_expired: int
    packs_condemned: int
    packs_deleted: int
    bytes_freed: int
    local_blobs_dropped: int
    local_bytes_freed: int
